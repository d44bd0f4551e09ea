#!/usr/bin/env bash
# A long run of the differential test: TOTAL random functions, BATCH at a time, with seeds
# FIRST, FIRST+1, ...; see TESTING.md.
#
#   crates/autodiff-fuzzgen/long-run.sh [TOTAL [BATCH [FIRST]]]     (default 10000 500 1)
#
# A batch that does not compile is retried without the functions the compiler points at
# (AUTODIFF_FUZZ_SKIP), which are reported as compile failures. AUTODIFF_FUZZ_FEATURES and
# AUTODIFF_FUZZ_POINTS pass through. Logs go to $LOGDIR (default target/fuzz-logs); the
# last line printed is the summary.
set -uo pipefail

cd "$(dirname "$0")/../.."

TOTAL=${1:-10000}
BATCH=${2:-500}
FIRST=${3:-1}
LOGDIR=${LOGDIR:-target/fuzz-logs}
mkdir -p "$LOGDIR"

cargo build -q -p autodiff-fuzzgen --bin autodiff-fuzzgen || exit 1
GEN=${CARGO_TARGET_DIR:-target}/debug/autodiff-fuzzgen

functions=0
compile_failures=""
ncompile=0
test_failures=0
batches=$(((TOTAL + BATCH - 1) / BATCH))
for ((b = 0; b < batches; b++)); do
    seed=$((FIRST + b))
    count=$BATCH
    skip=""
    for attempt in 1 2 3 4 5 6; do
        log="$LOGDIR/seed-$seed.log"
        AUTODIFF_FUZZ_SEED=$seed AUTODIFF_FUZZ_COUNT=$count AUTODIFF_FUZZ_SKIP=$skip \
            cargo test -q -p autodiff-fuzzgen --test differential -- --nocapture >"$log" 2>&1
        if grep -q "differential: seed" "$log"; then
            break
        fi
        # Did not compile: skip the functions the errors point at.
        lines=$(grep -oE 'out/batch\.rs:[0-9]+' "$log" | cut -d: -f2 | sort -un)
        # Errors in the f32 twin: the function around the line, read from the file itself.
        f32_names=$(grep -oE '[^ ]*/out/batch_f32\.rs:[0-9]+' "$log" | sort -u | while IFS=: read -r file l; do
            # At an attribute, the function is the one below it.
            awk -v L="$l" '
                NR == L && /^#\[/ { below = 1 }
                /^pub fn fz[0-9]+\(/ && (NR <= L || below) { split($3, a, "("); name = a[1]; if (NR > L) exit }
                END { print name }' "$file"
        done)
        if [ -z "$lines" ] && [ -z "$f32_names" ]; then
            echo "seed $seed: build failed, see $log"
            break
        fi
        new=""
        for l in $lines; do
            f=$(AUTODIFF_FUZZ_SKIP=$skip "$GEN" locate --seed "$seed" --count "$count" --line "$l" 2>/dev/null | cut -d' ' -f1)
            case ",$skip,$new," in *",$f,"*) ;; *) [ -n "$f" ] && new="$new,$f" ;; esac
        done
        for f in $f32_names; do
            case ",$skip,$new," in *",$f,"*) ;; *) [ -n "$f" ] && new="$new,$f" ;; esac
        done
        new=${new#,}
        if [ -z "$new" ]; then
            echo "seed $seed: errors outside generated functions, see $log"
            break
        fi
        echo "seed $seed: does not compile: $new (see $LOGDIR/seed-$seed-compile-$attempt.log)"
        cp "$log" "$LOGDIR/seed-$seed-compile-$attempt.log"
        for f in ${new//,/ }; do
            compile_failures="$compile_failures seed-$seed:$f"
            ncompile=$((ncompile + 1))
        done
        skip=${skip:+$skip,}$new
    done
    n=$(grep -oE "differential: seed [0-9]+, [0-9]+ functions" "$log" | grep -oE '[0-9]+ functions' | cut -d' ' -f1)
    functions=$((functions + ${n:-0}))
    fails=$(grep -c '^FAIL' "$log")
    test_failures=$((test_failures + fails))
    grep -oE "differential: [0-9].*|^f32: .*" "$log" | sed "s/^/seed $seed: /"
    grep '^FAIL' "$log" | cut -c1-400 | sed "s/^/seed $seed: /"
done
echo "long run: $functions functions checked in $batches batches (seeds $FIRST..$((FIRST + batches - 1))), $test_failures failed checks, $ncompile functions that did not compile$compile_failures"
