#!/usr/bin/env bash
# CI: the HTML report in a real browser. Writes the seed example's report
# with the CLI, checks its markup with xmllint, renders it with headless
# Chromium at 1400 and 900 px wide to PNGs that must not be blank, checks
# that at 900 px the page does not scroll sideways, and counts the layer
# cells in the DOM Chromium builds (40). Then a model of 100,000 layers,
# whose page folds the map into runs: one row of 8 cells, timed. The
# screenshots go to ${KVSHARD_ARTIFACTS:-build/artifacts}.
#
# usage: .ci/report.sh BUILD_DIR [SCREENSHOT_COPY]
#   BUILD_DIR        a build tree holding the kvshard CLI (BUILD_DIR/kvshard)
#   SCREENSHOT_COPY  optional: where to copy the seed screenshot at 1400 px
#                    (docs/images/seed-report.png is made this way)
#
# Installs nothing: the caller provides chromium, a font (fonts-dejavu-core:
# Chromium installed without recommends has none), xmllint (libxml2-utils)
# and python3.
set -euo pipefail

build=${1:?usage: .ci/report.sh BUILD_DIR [SCREENSHOT_COPY]}
build=$(cd "$build" && pwd)
copy_to=${2:-}
[ -z "$copy_to" ] || copy_to=$(cd "$(dirname "$copy_to")" && pwd)/$(basename "$copy_to")
cd "$(dirname "$0")/.."
artifacts=${KVSHARD_ARTIFACTS:-build/artifacts}
mkdir -p "$artifacts"
cli="$build/kvshard"

for tool in chromium xmllint python3; do
    command -v "$tool" >/dev/null || {
        echo "report.sh: $tool not found (apt-get install chromium libxml2-utils python3)" >&2
        exit 1
    }
done
[ -x "$cli" ] || { echo "report.sh: no CLI at $cli; build the kvshard_cli target first" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Headless Chromium with a fresh profile, stopped after $1 seconds; nothing
# reaches the network.
browser() {
    local limit=$1 profile
    shift
    profile=$(mktemp -d "$work/profile.XXXXXX")
    timeout "$limit" chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" "$@" 2>>"$work/chromium.log"
}

now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

seconds_since() {
    local ms=$(($(now_ms) - $1))
    printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# Layer cells in a DOM dump: one <rect id="lN" class="layer ..."> per layer.
count_cells() {
    grep -o '<rect id="l[0-9]*" class="layer ' "$1" | wc -l | tr -d ' '
}

fail() {
    echo "report.sh: $*" >&2
    if [ -s "$work/chromium.log" ]; then
        echo "---- chromium log (last 20 lines) ----" >&2
        tail -n 20 "$work/chromium.log" >&2
    fi
    exit 1
}

# ---- the seed example ------------------------------------------------------
seed=examples/qwen3_5_35b_a3b_tp4.yaml
"$cli" report "$seed" -o "$work/seed.html"
"$cli" plan "$seed" --format=svg -o "$work/seed.svg"
xmllint --noout "$work/seed.html" "$work/seed.svg"
echo "seed report: $(wc -c <"$work/seed.html") bytes HTML, $(wc -c <"$work/seed.svg") bytes SVG; well-formed"

# The PNG must show a page: decoded with the standard library only, it needs
# many distinct colours and a fair share of pixels that are not white.
check_png() {
python3 - "$1" <<'PY'
import struct, sys, zlib

data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("screenshot: not a PNG")
pos, idat, header = 8, [], None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        header = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat.append(body)
    pos += 12 + length
width, height, depth, colour, _, _, interlace = header
channels = {2: 3, 6: 4}.get(colour)
if depth != 8 or channels is None or interlace:
    sys.exit(f"screenshot: unexpected PNG format (depth {depth}, colour type {colour})")
raw = zlib.decompress(b"".join(idat))
stride = width * channels
prev = bytearray(stride)
colours, inked, at = set(), 0, 0
for _ in range(height):
    kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
    at += 1 + stride
    if kind == 1:
        for i in range(channels, stride):
            line[i] = (line[i] + line[i - channels]) & 0xFF
    elif kind == 2:
        line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
    elif kind == 3:
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + pred) & 0xFF
    elif kind != 0:
        sys.exit(f"screenshot: bad PNG filter {kind}")
    for i in range(0, stride, channels):
        rgb = bytes(line[i:i + 3])
        colours.add(rgb)
        if rgb != b"\xff\xff\xff":
            inked += 1
    prev = line
share = inked / (width * height)
print(f"screenshot: {width}x{height}, {len(colours)} distinct colours, "
      f"{100 * share:.1f}% of pixels not white")
if len(colours) < 64 or share < 0.02:
    sys.exit("screenshot: the page looks blank")
PY
}

for width in 1400 900; do
    start=$(now_ms)
    browser 60 --screenshot="$work/seed-$width.png" --window-size="$width,2000" \
        "file://$work/seed.html" >/dev/null || fail "Chromium failed on the $width px screenshot"
    [ -s "$work/seed-$width.png" ] || fail "Chromium wrote no $width px screenshot"
    echo "screenshot at $width px: $(wc -c <"$work/seed-$width.png") bytes; Chromium took $(seconds_since "$start") s"
    check_png "$work/seed-$width.png"
    cp "$work/seed-$width.png" "$artifacts/seed-report-$width.png"
done
echo "screenshots copied to $artifacts"

# At 900 px the page must not scroll sideways (tables and figures scroll in
# their own box). The page allows no script, so a copy that allows one
# writes the document's scroll width and the smallest text in the charts,
# in screen px, into the DOM.
sed -e "s/style-src 'unsafe-inline'/style-src 'unsafe-inline'; script-src 'unsafe-inline'/" \
    -e 's|</body>|<script>var m = 1000; document.querySelectorAll("svg text").forEach(function (t) { var f = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a; if (f < m) m = f; }); document.body.setAttribute("data-scroll-width", String(document.documentElement.scrollWidth)); document.body.setAttribute("data-min-font", String(m));</script></body>|' \
    "$work/seed.html" >"$work/measure.html"
browser 60 --window-size=900,2000 --dump-dom "file://$work/measure.html" >"$work/measure.dom.html" ||
    fail "Chromium failed to measure the page at 900 px"
scroll=$(grep -o 'data-scroll-width="[0-9]*"' "$work/measure.dom.html" | grep -o '[0-9]*')
font=$(grep -o 'data-min-font="[0-9.]*"' "$work/measure.dom.html" | tr -dc '0-9.')
[ -n "$scroll" ] || fail "the measuring script did not run"
[ "$scroll" -le 900 ] || fail "at 900 px the page is $scroll px wide: it scrolls sideways"
python3 -c "import sys; sys.exit(0 if float('$font') >= 11 else 1)" ||
    fail "at 900 px chart text is $font px, below 11"
echo "at 900 px: page $scroll px wide, smallest chart text $font px"

browser 60 --dump-dom "file://$work/seed.html" >"$work/seed.dom.html" ||
    fail "Chromium failed to dump the seed DOM"
cells=$(count_cells "$work/seed.dom.html")
[ "$cells" = 40 ] || fail "the seed DOM holds $cells layer cells, not 40"
echo "seed DOM: $cells layer cells"

if [ -n "$copy_to" ]; then
    cp "$work/seed-1400.png" "$copy_to"
    echo "screenshot copied to $copy_to"
fi

# ---- 100,000 layers ----------------------------------------------------------
# Every 4th layer full attention (GDN state otherwise), TP 4, split 2.
cat >"$work/big.yaml" <<'YAML'
model_type: big_hybrid
num_hidden_layers: 100000
full_attention_interval: 4
hidden_size: 2048
num_attention_heads: 16
num_key_value_heads: 2
head_dim: 256
linear_num_key_heads: 16
linear_num_value_heads: 32
linear_key_head_dim: 128
linear_value_head_dim: 128
linear_conv_kernel_dim: 4
YAML
split=(--world_size=4 --enable_layerwise_split=true --layerwise_split_size=2)
"$cli" report "$work/big.yaml" "${split[@]}" -o "$work/big.html"
"$cli" plan "$work/big.yaml" "${split[@]}" --format=svg -o "$work/big.svg"
xmllint --noout "$work/big.html" "$work/big.svg"
echo "100,000 layers: $(wc -c <"$work/big.html") bytes HTML, $(wc -c <"$work/big.svg") bytes SVG; well-formed"

# A few seconds now that the page folds; the limit leaves room for a slow runner.
start=$(now_ms)
browser 120 --dump-dom "file://$work/big.html" >"$work/big.dom.html" ||
    fail "Chromium did not dump the 100,000-layer DOM within 120 s"
took=$(seconds_since "$start")
# The page folds the map: layers 0-99,999 repeat "L L L F0 L L L F1", one
# run row of 8 cells.
runs=$(grep -o '<g class="run"' "$work/big.dom.html" | wc -l | tr -d ' ')
cells=$(grep -o '<rect class="layer ' "$work/big.dom.html" | wc -l | tr -d ' ')
[ "$runs" = 1 ] || fail "the 100,000-layer DOM holds $runs run rows, not 1"
[ "$cells" = 8 ] || fail "the 100,000-layer DOM holds $cells cells in its runs, not 8"
grep -q '>0–99999</text>' "$work/big.dom.html" || fail "the run does not cover layers 0–99999"
echo "100,000-layer DOM: $runs run row of $cells cells; Chromium took $took s"

echo "report.sh: all checks passed"
