#!/bin/sh
# bootstrap.sh — ./bootstrap installs what building and running nh need
# for the README's first command, and the tests' packages only with
# --tests (the README's second command, which .ci/run runs), always
# without recommended packages; when another apt holds the dpkg lock it
# waits and says so (issue 24, item 9).
#
# Run on a PATH of stubs: apt-get records its arguments (its first
# `update` fails as when another apt holds the lists' lock), fuser says a
# lock is held, id says root, pkg-config knows GSL but not CMocka, and
# gnuplot, pdflatex and kpsewhich are missing; the other tools are the
# machine's.  `--only-deps` stops before configure and make.
set -u
src=$(cd "${srcdir:-.}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

bin="$tmp/bin"
mkdir "$bin"
for tool in sh cat grep rm mktemp sleep dirname cc gcc make flex bison \
            autoreconf automake python3 nproc; do
    p=$(command -v "$tool") && ln -s "$p" "$bin/$tool"
done
cat > "$bin/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >> "$tmp/apt.log"
case " \$* " in
*" update "*)
    if [ ! -e "$tmp/updated-once" ]; then
        : > "$tmp/updated-once"
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
        exit 100
    fi ;;
esac
exit 0
EOF
cat > "$bin/fuser" <<'EOF'
#!/bin/sh
exit 0
EOF
cat > "$bin/id" <<'EOF'
#!/bin/sh
echo 0
EOF
cat > "$bin/pkg-config" <<'EOF'
#!/bin/sh
case "$*" in *gsl*) exit 0 ;; esac
exit 1
EOF
chmod +x "$bin/apt-get" "$bin/fuser" "$bin/id" "$bin/pkg-config"

# run NAME ARGS...: bootstrap ARGS on the stubs; apt-get's calls in
# $tmp/NAME.apt, what bootstrap says in $tmp/NAME.out.
run() {
    name=$1; shift
    rm -f "$tmp/apt.log" "$tmp/updated-once"
    PATH=$bin BOOTSTRAP_LOCK_POLL=0 "$bin/sh" "$src/bootstrap" "$@" \
        > "$tmp/$name.out" 2>&1
    status=$?
    [ $status = 0 ] || { bad "bootstrap $*: status $status"; cat "$tmp/$name.out"; }
    mv "$tmp/apt.log" "$tmp/$name.apt" 2>/dev/null || : > "$tmp/$name.apt"
}

# The README's first command: what nh needs to build and run, only.
run first --only-deps
grep -q 'install .*gnuplot-nox' "$tmp/first.apt" || bad "the first command does not install gnuplot-nox"
for pkg in libcmocka-dev texlive-latex-base python3-ipykernel python3-nbclient parallel python3-sympy chromium; do
    grep -q "$pkg" "$tmp/first.apt" && bad "the first command installs $pkg, a test package"
done
# The second: the tests' packages too.
run tests --tests --only-deps
for pkg in gnuplot-nox libcmocka-dev texlive-latex-base parallel chromium; do
    grep -q "install .*$pkg" "$tmp/tests.apt" || bad "--tests does not install $pkg"
done
for name in first tests; do
    # every install without recommended packages, waiting for the lock
    grep 'install' "$tmp/$name.apt" | grep -qv -- '--no-install-recommends' &&
        bad "$name: an install with recommended packages: $(cat "$tmp/$name.apt")"
    grep -v -- '-o DPkg::Lock::Timeout=600' "$tmp/$name.apt" | grep -q . &&
        bad "$name: an apt-get that does not wait for the dpkg lock: $(cat "$tmp/$name.apt")"
    # the lists' lock was busy once: waited for, said so, tried again
    [ "$(grep -c ' update' "$tmp/$name.apt")" = 2 ] ||
        bad "$name: apt-get update not tried again after the lock: $(cat "$tmp/$name.apt")"
    grep -q "another apt holds the dpkg lock: waiting for it (up to 10 minutes)" "$tmp/$name.out" ||
        bad "$name: does not say that it waits for the dpkg lock: $(cat "$tmp/$name.out")"
    grep -q "another apt holds the package lists' lock: waiting for it" "$tmp/$name.out" ||
        bad "$name: does not say that it waits for the lists' lock: $(cat "$tmp/$name.out")"
done

# The README's commands, and .ci/run running the second.
readme="$src/README.md"
grep -q '^\./bootstrap && \./nh examples/rolling_sphere\.nh ' "$readme" ||
    bad "README.md's first command is not ./bootstrap && ./nh examples/rolling_sphere.nh"
grep -q '^\./bootstrap --tests && make check -j"$(nproc)" ' "$readme" ||
    bad "README.md's test command is not ./bootstrap --tests && make check -j\"\$(nproc)\" (every core)"
cmd=$(grep '^\./bootstrap --tests && make check' "$readme" | sed 's/ *#.*$//')
grep -qxF "$cmd" "$src/.ci/run" ||
    bad ".ci/run does not run the README's test command ($cmd)"

[ $fail = 0 ] && echo "bootstrap: the first command installs gnuplot-nox alone, --tests the tests' packages; none with recommends; the lock waited for and said"
exit $fail
