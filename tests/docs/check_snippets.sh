#!/usr/bin/env bash
# The documentation's C++ must be real. For README.md and docs/tutorial.md:
#   - every ```cpp block that is a complete program (has `int main`) is compiled against cairn
#     (-Wall -Wextra -Wpedantic -Werror) and run on 2 threads-engine ranks;
#   - a complete program in README.md must be identical to a file of examples/ (it says so);
#   - every other ```cpp block of docs/tutorial.md must be a verbatim excerpt of a file of
#     examples/ (the tutorial walks through them).
# usage: check_snippets.sh <source dir> <work dir> <c++ compiler> <link arguments...>
set -euo pipefail
src=$1 work=$2 cxx=$3
shift 3
link=("$@")
rm -rf "$work"
mkdir -p "$work"

# Writes each ```cpp block of $1 to $work/<name>.<n>.cpp (indentation of the fence removed).
extract() {
  local md=$1 name
  name=$(basename "$md" .md)
  awk -v out="$work/$name" '
    !inside && /^ *```cpp *$/ { inside = 1; n++; match($0, /^ */); indent = RLENGTH;
                                file = sprintf("%s.%d.cpp", out, n); printf "" > file; next }
    inside && /^ *``` *$/ { inside = 0; close(file); next }
    inside { print substr($0, indent + 1) > file }
  ' "$md"
}

contains() {  # true if file $2 contains the text of file $1
  local needle hay
  needle=$(cat "$1")
  hay=$(cat "$2")
  [[ "$hay" == *"$needle"* ]]
}

failures=0
programs=0
excerpts=0
for md in README.md docs/tutorial.md; do
  extract "$src/$md"
  name=$(basename "$md" .md)
  for block in "$work/$name".*.cpp; do
    [[ -e $block ]] || continue
    if grep -q 'int main' "$block"; then
      programs=$((programs + 1))
      exe=${block%.cpp}
      if ! "$cxx" -std=c++20 -Wall -Wextra -Wpedantic -Werror -I"$src/include" "$block" \
        "${link[@]}" -o "$exe" 2>"$exe.log"; then
        echo "FAIL: $md: the program $(basename "$block") does not compile:"
        cat "$exe.log"
        failures=$((failures + 1))
        continue
      fi
      if ! CAIRN_ENGINE=threads CAIRN_RANKS=2 CAIRN_WATCHDOG_S=60 timeout 120 "$exe" >"$exe.out" 2>&1; then
        echo "FAIL: $md: the program $(basename "$block") fails on 2 ranks:"
        cat "$exe.out"
        failures=$((failures + 1))
        continue
      fi
      if [[ $md == README.md ]]; then
        same=""
        for ex in "$src"/examples/*.cpp; do
          if cmp -s "$block" "$ex"; then same=$ex; fi
        done
        if [[ -z $same ]]; then
          echo "FAIL: $md: the program $(basename "$block") is not a copy of a file of examples/:"
          for ex in "$src"/examples/*.cpp; do diff -u "$ex" "$block" | head -40 || true; done
          failures=$((failures + 1))
          continue
        fi
        echo "ok: $md: $(basename "$block") is examples/$(basename "$same"), compiles and runs"
      else
        echo "ok: $md: $(basename "$block") compiles and runs"
      fi
    elif [[ $md == docs/tutorial.md ]]; then
      excerpts=$((excerpts + 1))
      found=""
      for ex in "$src"/examples/*.cpp; do
        if contains "$block" "$ex"; then found=$ex; fi
      done
      if [[ -z $found ]]; then
        echo "FAIL: $md: block $(basename "$block") is not an excerpt of a file of examples/:"
        cat "$block"
        failures=$((failures + 1))
      fi
    fi
  done
done
echo "$programs complete programs, $excerpts tutorial excerpts checked; $failures failures"
((failures == 0))
