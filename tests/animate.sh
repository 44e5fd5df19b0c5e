#!/bin/sh
# animate.sh — `animate` checked in a real browser (LANGUAGE.md §7.5):
# tests/animate.py has nh write pages and images of the rolling disk and
# of every example that draws itself, opens them in Debian's headless
# Chromium and compares what is drawn with the samples (`table`),
# projected by a camera of its own.  ./bootstrap installs chromium.
set -u
: "${NH:?NH must name the nh binary}"
src=${srcdir:-.}
case $src in /*) ;; *) src=$(pwd)/$src ;; esac
if ! command -v chromium >/dev/null 2>&1; then
    echo "FAIL: the animation test needs Debian's chromium (./bootstrap installs it)"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nh-animate-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
HOME=$tmp/home # Chromium's caches and crash folders, not the user's
export HOME
mkdir "$tmp/home" "$tmp/work"
/usr/bin/python3 "$src/tests/animate.py" "$NH" "$src" "$tmp/work"
