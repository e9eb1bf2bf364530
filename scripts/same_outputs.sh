#!/usr/bin/env bash
# Behaviour unchanged? Runs every shipped scenario (scenarios/*.orr and scenarios/*/*.orr that
# run on their own) with the binary of a base revision and with the working tree's, and
# compares what `orrery run` writes, file by file, byte for byte (runs are deterministic: the
# same scenario and seed give the same bytes, tests/all/invariants.rs). Also compares `orrery
# check`'s standard output. Exit 0 when everything is identical, 1 otherwise (the differing
# files are listed), 2 on a usage or build error.
#
#   scripts/same_outputs.sh BASE_REV      # e.g. scripts/same_outputs.sh HEAD~3
#
# The base is built in a git worktree under target/same-outputs/ with its own target folder
# (kept between uses, so a second comparison rebuilds only what changed).
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: scripts/same_outputs.sh BASE_REV}"
rev=$(git rev-parse --verify "$base^{commit}") || exit 2
work=target/same-outputs
tree="$work/tree"
mkdir -p "$work"
if [ -d "$tree" ]; then
  git -C "$tree" checkout -q --detach "$rev"
else
  git worktree add -q --detach "$tree" "$rev"
fi
(cd "$tree" && CARGO_TARGET_DIR="$PWD/../target" cargo build --release --quiet) || exit 2
cargo build --release --quiet || exit 2
old="$work/target/release/orrery"
new=target/release/orrery
out="$work/out"
rm -rf "$out"
mkdir -p "$out/old" "$out/new"
status=0
for f in scenarios/*.orr scenarios/*/*.orr; do
  # A file that does not check on its own is part of another (an include).
  "$new" check "$f" >/dev/null 2>&1 || continue
  name=${f#scenarios/}
  name=${name%.orr}
  name=${name//\//__}
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    "$bin" check "$f" >"$out/$side/$name.check" 2>&1 || true
    "$bin" run "$f" --seed 1 --out "$out/$side/$name" >/dev/null 2>&1 ||
      echo "run failed" >"$out/$side/$name.failed"
  done
done
if ! diff -rq "$out/old" "$out/new"; then
  status=1
fi
[ "$status" -eq 0 ] && echo "identical: every scenario's run outputs and check output ($(git rev-parse --short "$rev") vs the working tree)"
exit "$status"
