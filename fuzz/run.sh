#!/bin/bash
# run.sh — builds the nh fuzzer (fuzz_session.c with libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer) from the project's sources and runs it.
#
#   fuzz/run.sh [SECONDS] [LIBFUZZER-OPTIONS...]   fuzz for SECONDS (default 60)
#   fuzz/run.sh --build                            only build
#   fuzz/run.sh --repro FILE...                    run the given inputs once
#   fuzz/run.sh --seeds                            remake the seeds from
#                                                  examples/ and tests/lang/
#
# Exit status: 0 when the run found nothing; 1 on a finding (crash,
# sanitizer report, leak, timeout, out of memory) or a build failure.  The
# findings are copied to $NH_FUZZ_WORK/artifacts and printed to the log.
#
# Needs clang and libFuzzer (Debian: apt-get install clang libclang-rt-14-dev
# or the libclang-rt-N-dev matching `clang --version`), libgsl-dev, and the
# generated lang/parser.c and lang/lexer.c that `make` writes (made here with
# bison and flex when they are missing).
#
# Environment: NH_FUZZ_WORK, the working folder (default: a new temporary
# one, removed at the end unless something was found); CC (default clang).
# The corpus the run grows is $NH_FUZZ_WORK/corpus; fuzz/corpus, the seeds,
# is only read.  The fuzzer runs inside $NH_FUZZ_WORK/scratch, so the files
# that `table ... > "x"` writes land there.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cc=${CC:-clang}

# The seeds taken from the project's scripts: comments dropped (the
# fuzzer mutates statements, not prose); scripts over the harness's 8 KiB
# or naming a path (skipped by the harness) left out.
if [ "${1:-}" = --seeds ]; then
    rm -f "$here"/corpus/examples_*.nh "$here"/corpus/lang_*.nh
    for f in "$repo"/examples/*.nh "$repo"/tests/lang/*.nh; do
        [ -e "$f" ] || continue
        d=$(basename "$(dirname "$f")")
        [ "$d" = lang ] || d=examples
        out=$here/corpus/${d}_$(basename "$f")
        grep -v '^[[:space:]]*#' "$f" | sed 's/[[:space:]][[:space:]]*#.*$//' > "$out"
        if [ "$(wc -c < "$out")" -gt 8192 ] || grep -q '"[^"]*/' "$out"; then
            rm -f "$out"
        fi
    done
    echo "run.sh: $(find "$here/corpus" -type f | wc -l) seeds in $here/corpus"
    exit 0
fi

mode=run
seconds=60
case "${1:-}" in
--build) mode=build; shift ;;
--repro) mode=repro; shift ;;
[0-9]*) seconds=$1; shift ;;
esac

if [ -n "${NH_FUZZ_WORK:-}" ]; then
    work=$NH_FUZZ_WORK
    keep=1
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/nh-fuzz.XXXXXX")
    keep=0
fi
mkdir -p "$work/build/lang" "$work/corpus" "$work/artifacts" \
         "$work/scratch" "$work/tmp"
bin=$work/build/fuzz_session

# ---- build ---------------------------------------------------------------

# The library's C files, as Makefile.am lists them (libnh_a_SOURCES).
sources=$(awk '
    /^libnh_a_SOURCES[[:space:]]*=/ { on = 1; sub(/^[^=]*=/, "") }
    on { line = $0; more = sub(/\\[[:space:]]*$/, "", line)
         n = split(line, w, /[[:space:]]+/)
         for (i = 1; i <= n; i++) if (w[i] ~ /\.c$/) print w[i]
         if (!more) on = 0 }' "$repo/Makefile.am")
if [ -z "$sources" ]; then
    echo "run.sh: no libnh_a_SOURCES in $repo/Makefile.am" >&2
    exit 1
fi

# The generated scanner and parser: the build's own when they are up to
# date, else made here (the same commands as Makefile.am).
gen=$repo
if [ ! -f "$repo/lang/parser.c" ] || [ ! -f "$repo/lang/lexer.c" ] ||
   [ "$repo/lang/parser.y" -nt "$repo/lang/parser.c" ] ||
   [ "$repo/lang/lexer.l" -nt "$repo/lang/lexer.c" ]; then
    gen=$work/build
    if ! bison -Wall -Werror -d -o "$gen/lang/parser.c" "$repo/lang/parser.y" ||
       ! flex --header-file="$gen/lang/lexer.h" -o "$gen/lang/lexer.c" \
            "$repo/lang/lexer.l"; then
        echo "run.sh: bison/flex failed" >&2
        exit 1
    fi
fi

files="$here/fuzz_session.c $gen/lang/parser.c $gen/lang/lexer.c"
for f in $sources; do files="$files $repo/$f"; done

# Rebuild only when a source, header or this script is newer than the binary.
stale=1
if [ -x "$bin" ] && [ -z "$(find "$repo/lang" "$repo/interp" "$here" \
        \( -name '*.[chyl]' -o -name run.sh \) -newer "$bin" -print -quit)" ]; then
    stale=0
fi
if [ $stale = 1 ]; then
    echo "run.sh: building $bin"
    # Word splitting wanted: the file list and pkg-config's flags.
    # shellcheck disable=SC2046,SC2086
    "$cc" -std=gnu11 -g -O1 -Wall -Wextra -fno-omit-frame-pointer \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$gen" -I"$repo" $(pkg-config --cflags gsl) \
        $files -o "$bin" $(pkg-config --libs gsl) -lm ||
        { echo "run.sh: build failed" >&2; exit 1; }
fi
if [ $mode = build ]; then
    echo "run.sh: built $bin"
    exit 0
fi

# ---- run -----------------------------------------------------------------

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1:${ASAN_OPTIONS:-}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}
export NH_PATH=$repo/stdlib
export TMPDIR=$work/tmp

if [ $mode = repro ]; then
    abs=()
    for f in "$@"; do abs+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
    cd "$work/scratch" || exit 1
    "$bin" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 "${abs[@]}"
    exit $?
fi

echo "run.sh: fuzzing for $seconds s in $work"
(cd "$work/scratch" &&
 "$bin" -dict="$here/nh.dict" -max_total_time="$seconds" -timeout=10 \
     -rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1 \
     -artifact_prefix="$work/artifacts/" "$@" \
     "$work/corpus" "$here/corpus" < /dev/null)
status=$?

# libFuzzer's own verdict counts: a crash, a sanitizer report, a leak, a
# timeout (-timeout) or too much memory.  A slow-unit-* file (an input
# whose runs added up to 10 s, e.g. with the second run libFuzzer makes
# to confirm a leak) is shown but not counted: the limit is -timeout.
found=$(find "$work/artifacts" -type f ! -name 'slow-unit-*' | sort)
slow=$(find "$work/artifacts" -type f -name 'slow-unit-*' | sort)
for f in $slow; do
    echo "run.sh: slow input (not counted as a finding): $f"
    head -c 600 "$f"; echo
done
# Inputs that ran into the harness's time limit (fuzz_session.c): long
# work asked for and stopped with an error, as Ctrl-C stops it.  Shown,
# not counted; kept with the artifacts.
limited=$(find "$work/scratch" -maxdepth 1 -type f -name 'limited-*.nh' | sort)
for f in $limited; do
    echo "run.sh: input stopped by the time limit (not counted as a finding): $f"
    head -c 300 "$f"; echo
    mv "$f" "$work/artifacts/" 2>/dev/null
done
[ -n "$limited" ] && keep=1
if [ $status != 0 ] || [ -n "$found" ]; then
    echo "run.sh: FINDING (libFuzzer exit status $status)"
    for f in $found; do
        echo "---- $f (reproduce: fuzz/run.sh --repro FILE; minimise with"
        echo "     -minimize_crash=1 -runs=10000 on the binary $bin)"
        od -c "$f" | head -40
    done
    exit 1
fi
echo "run.sh: no finding in $seconds s"
[ $keep = 0 ] && [ -z "$slow" ] && rm -rf "$work"
exit 0
