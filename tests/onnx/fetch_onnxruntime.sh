#!/bin/sh
# Installs ONNX Runtime for Node.js (npm's onnxruntime-node, whose package carries the CPU
# library for Linux x64) into build/onnxruntime (or the folder given), where the ONNX tests run
# exported models in it. --ignore-scripts: the package's install script only downloads GPU
# libraries. A second run finds the version installed and does nothing.
set -eu
dir=${1:-build/onnxruntime}
version=1.30.0
installed="$dir/node_modules/onnxruntime-node/package.json"
if [ -f "$installed" ] && grep -q "\"version\": \"$version\"" "$installed"; then
    exit 0
fi
command -v npm >/dev/null || { echo "fetch_onnxruntime.sh: npm is not installed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$dir"
npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$version"
