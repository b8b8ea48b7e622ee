#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: run kit's GPU tests and the standard benchmark sweep, and write
# every log and result into the folder given as the only argument.
#
#   scripts/gpu_check.sh OUTDIR
#
# Wheels carried in .whl/ (cupy-cuda12x and the nvidia-* CUDA libraries it needs, plus anything the
# machine lacks) are installed offline into /tmp/site first. OUTDIR receives:
#   summary.txt       one line per step with its exit status, then the GPU targets
#   environment.txt   nvidia-smi, Python and the packages found; backend.txt: kit's GPU probe
#   pytest-gpu.log    `pytest -m gpu` over tests/ (every GPU-marked test; none may skip)
#   lesson12.log      lesson 12 under nbval on this machine (its GPU branch, live)
#   bench.json        `python -m kit.bench` standard sweep (kit.bench/1 schema), bench.png its plot
#   bench.log         the sweep's summary; bench-progress.log its progress bar
# Exit status: 0 when every step passed, 3 when no GPU is usable, 1 otherwise.
set -uo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
mkdir -p "$1"
out="$(cd "$1" && pwd)"
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
status=0
: > "$out/summary.txt"

note() { echo "$*" | tee -a "$out/summary.txt"; }
step() {  # step NAME LOGFILE COMMAND...: run, log, record the exit status
    local name="$1" logfile="$2"
    shift 2
    local start=$SECONDS rc=0
    "$@" > "$out/$logfile" 2>&1 || rc=$?
    note "$name: exit $rc after $((SECONDS - start)) s (log: $logfile)"
    [ "$rc" -eq 0 ] || status=1
    return "$rc"
}

# 1. Offline install of the carried wheels.
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G ".whl/*.whl" > /dev/null; then
    step "install wheels" install.log \
        python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site:$PYTHONPATH"
    # pip's nvidia-* wheels keep their shared libraries here; make sure CuPy's loader finds them.
    for lib in /tmp/site/nvidia/*/lib; do
        [ -d "$lib" ] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
else
    note "install wheels: skipped (no .whl/*.whl)"
fi

# 2. What machine is this?
{
    nvidia-smi || echo "nvidia-smi not found"
    python3 --version
    python3 -m pip list 2>/dev/null | grep -iE "^(numpy|cupy|nvidia|pytest|nbval|matplotlib)" || true
} > "$out/environment.txt" 2>&1
python3 - > "$out/backend.txt" 2>&1 <<'PY'
import kit
print("gpu_available:", kit.backend.gpu_available())
print("reason:", kit.backend.gpu_unavailable_reason())
PY
if ! grep -q "gpu_available: True" "$out/backend.txt"; then
    note "no usable GPU, nothing measured: $(tail -n 1 "$out/backend.txt")"
    exit 3
fi

# 3. Every GPU-marked test; a skip here means a GPU test could not run, which is a failure.
# pytest turns warnings into errors; CuPy's import-time advice about where CUDA lives (from
# cupy._environment) would then read as "no GPU", so it is shown in the log instead.
step "pytest -m gpu" pytest-gpu.log \
    python3 -m pytest -m gpu -p no:cacheprovider -rs -W "default:::cupy._environment" tests
if grep -qE "^SKIPPED" "$out/pytest-gpu.log"; then
    note "pytest -m gpu: some GPU tests were skipped on a GPU machine (see pytest-gpu.log)"
    status=1
fi

# 4. Lesson 12 takes its GPU branch here; its outputs must still match the stored ones.
if python3 -c "import nbval" 2> /dev/null; then
    step "lesson 12 (nbval)" lesson12.log \
        python3 -m pytest -p no:cacheprovider --nbval --nbval-current-env \
        --nbval-sanitize-with notebooks/sanitize.cfg notebooks/12_cpu_vs_gpu.ipynb
else
    note "lesson 12 (nbval): skipped (nbval is not installed)"
fi

# 5. The standard sweep: CPU and GPU, every workload, the targets answered in bench.log.
step "python -m kit.bench" bench.log \
    bash -c 'python3 -m kit.bench --out "$1/bench.json" --plot "$1/bench.png" \
             2> "$1/bench-progress.log"' _ "$out"
if [ -f "$out/bench.json" ]; then
    sed -n '/^targets:/,$p' "$out/bench.log" | tee -a "$out/summary.txt"
fi

note "overall: $([ "$status" -eq 0 ] && echo passed || echo FAILED)"
exit "$status"
