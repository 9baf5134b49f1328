#!/usr/bin/env bash
# docs/onnx.md's end-to-end example as a test: train a small CNN on Fashion-MNIST, export it,
# and classify the test set with `normnet eval`, with ONNX Runtime from JavaScript
# (apps/examples/onnx/classify_onnxruntime.js) and with OpenCV from C++ (classify_opencv): the
# three must count the same correct images. Exit 77 (skipped) where the data, node or
# onnxruntime-node is missing; the OpenCV step is left out where classify_opencv was not built.
#
#   guide_example.sh NORMNET ONNXRUNTIME_DIR EXAMPLES_DIR WORK [CLASSIFY_OPENCV]
set -euo pipefail
normnet=$1 runtime=$2 examples=$3 work=$4 opencv=${5:-}
data=/usr/share/datasets/fashion-mnist
[ -e "$data/t10k-images-idx3-ubyte.gz" ] || { echo "NORMNET_SKIP: Fashion-MNIST not found in $data"; exit 77; }
command -v node >/dev/null || { echo "NORMNET_SKIP: node is not installed"; exit 77; }
[ -d "$runtime/node_modules/onnxruntime-node" ] || { echo "NORMNET_SKIP: onnxruntime-node not installed in $runtime"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
"$normnet" train --model cnn --dataset fashion-mnist --epochs 1 --limit 2000 --channels 8,16 --fc 32 --out "$work/run" --quiet
"$normnet" export --checkpoint "$work/run"
counted() { grep -o '([0-9]*/[0-9]*)' <<<"$1"; }
eval_line=$("$normnet" eval --checkpoint "$work/run" | grep accuracy)
ort_line=$(cd "$runtime" && node "$examples/classify_onnxruntime.js" "$work/run/model.onnx" "$data")
echo "normnet eval: $eval_line"
echo "$ort_line"
[ "$(counted "$eval_line")" = "$(counted "$ort_line")" ] || { echo "ONNX Runtime counts another accuracy than normnet eval"; exit 1; }
if [ -n "$opencv" ]; then
    cv_line=$("$opencv" "$work/run/model.onnx" "$data")
    echo "$cv_line"
    [ "$(counted "$eval_line")" = "$(counted "$cv_line")" ] || { echo "OpenCV counts another accuracy than normnet eval"; exit 1; }
fi
