"""Horovod's API on kit.distributed: `import kit.horovod.torch as hvd` for kit.torch models,
`import kit.horovod.mxnet as hvd` (also `from kit.mx.contrib import horovod`) for kit.mx ones."""
