#!/usr/bin/env bash
# Checks a loss plot written by viewer/loss_plot.c (e.g. out/loss.svg) in headless Chromium.
# A page made here reads the SVG with the browser's XML parser (it must parse and hold the
# train, validation and learning-rate paths, each longer than 100 pixels (and the gradient
# norm's, when it has one), validation dots,
# ticks on three axes and a three-entry legend), then paints it on a canvas as an image (it
# must load, be neither blank nor filled) and again without each line in turn: each line must
# change at least 150 pixels, so it is really drawn and visible. The page writes its verdict into <body data-checked="ok"> or data-failed="...";
# the console must show no error. A screenshot of the plot itself is left in OUT.png.
#
# usage: scripts/check_loss_plot.sh PLOT.svg OUT.png
# e.g. after `make test`: scripts/check_loss_plot.sh tests/tmp/loss_plot_sample.svg tests/tmp/loss_plot_sample.png
set -u

USAGE="PLOT.svg OUT.png" SAMPLE=tests/tmp/loss_plot_sample.svg
source "$(dirname "$0")/headless_browser.sh"  # the arguments checked; $browser and its $flags
plot=$1
shot=$2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the SVG as base64 inside the page: a data: image does not taint the canvas
{
    printf '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n<div id="inline"></div>\n'
    printf '<script>\nconst base64 = "%s";\n' "$(base64 -w0 "$plot")"
    cat <<'EOF'
const failures = [];
const found = {};
function fail(why) { failures.push(why); }
function finish() {
  document.body.dataset.found = JSON.stringify(found);
  if (failures.length) document.body.dataset.failed = failures.join("; ");
  else document.body.dataset.checked = "ok";
}
window.onerror = (message) => { fail("script error: " + message); finish(); };

// 1. the markup, parsed as XML and put in the page
const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
const doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes), "image/svg+xml");
const svg = doc.documentElement;
if (doc.getElementsByTagName("parsererror").length || svg.nodeName !== "svg") {
  fail("the file does not parse as SVG");
} else {
  const live = document.getElementById("inline").appendChild(document.importNode(svg, true));
  for (const cls of ["train-loss", "val-loss", "lr"]) {
    const path = live.querySelector("path." + cls);
    const length = path ? path.getTotalLength() : 0;
    found[cls + "-length"] = Math.round(length);
    if (length < 100) fail("path." + cls + (path ? " is only " + length.toFixed(0) + " pixels long" : " is missing"));
  }
  // the gradient panel, when the log has gradient norms
  const grad = live.querySelector("path.grad-norm");
  if (grad) {
    found["grad-norm-length"] = Math.round(grad.getTotalLength());
    if (grad.getTotalLength() < 100) fail("path.grad-norm is only " + found["grad-norm-length"] + " pixels long");
  }
  found["val-points"] = live.querySelectorAll("g.val-points circle").length;
  if (found["val-points"] < 1) fail("no validation dots");
  for (const cls of ["x-ticks", "y-ticks", "lr-ticks"]) {
    found[cls] = live.querySelectorAll("g." + cls + " text").length;
    if (found[cls] < 3) fail("only " + found[cls] + " labels in g." + cls);
  }
  found["legend"] = live.querySelectorAll("g.legend text").length;
  if (found["legend"] !== 3) fail(found["legend"] + " legend entries, want 3");
}

// 2. the file as an image, and again without each line: each must change enough pixels
function render(source) {
  return new Promise((resolve, reject) => {
    const image = new Image();
    image.onerror = () => reject(new Error("does not load"));
    image.onload = () => {
      const canvas = document.createElement("canvas");
      canvas.width = image.naturalWidth;
      canvas.height = image.naturalHeight;
      const ctx = canvas.getContext("2d");
      ctx.drawImage(image, 0, 0);
      resolve(ctx.getImageData(0, 0, canvas.width, canvas.height).data);
    };
    image.src = source;
  });
}
function without(cls) {
  const copy = doc.cloneNode(true);
  copy.querySelector("path." + cls).remove();
  return "data:image/svg+xml;charset=utf-8," + encodeURIComponent(new XMLSerializer().serializeToString(copy));
}
async function checkPixels() {
  const full = await render("data:image/svg+xml;base64," + base64);
  let inked = 0;
  for (let i = 0; i < full.length; i += 4) inked += full[i] + full[i + 1] + full[i + 2] < 3 * 235;
  const share = inked / (full.length / 4);
  found["inked-share"] = Number(share.toFixed(3));
  if (share < 0.01 || share > 0.5) fail("the image is " + (100 * share).toFixed(1) + "% ink: blank or filled");
  for (const cls of ["train-loss", "val-loss", "lr"]) {
    if (!svg.querySelector("path." + cls)) continue;
    const rest = await render(without(cls));
    let changed = 0;
    for (let i = 0; i < full.length; i += 4)
      changed += Math.abs(full[i] - rest[i]) + Math.abs(full[i + 1] - rest[i + 1]) + Math.abs(full[i + 2] - rest[i + 2]) > 60;
    found[cls + "-pixels"] = changed;
    if (changed < 150) fail("path." + cls + " changes only " + changed + " pixels");
  }
}
checkPixels().catch((e) => fail("the image " + e.message)).finally(finish);
</script>
</body></html>
EOF
} >"$work/check.html"

# 1. the verdict, with the console on stderr
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-dom" --virtual-time-budget=10000 \
    --enable-logging=stderr --v=0 --dump-dom "file://$work/check.html" >"$work/dom.html" 2>"$work/console.log"
status=0
if grep -q 'data-failed=' "$work/dom.html"; then
    echo "check_loss_plot: $plot: $(grep -o 'data-failed="[^"]*"' "$work/dom.html" | sed 's/^data-failed="//; s/"$//')" >&2
    status=1
elif ! grep -q 'data-checked="ok"' "$work/dom.html"; then
    echo "check_loss_plot: $plot: the check page did not finish" >&2
    status=1
fi
if grep -E 'Uncaught|CONSOLE\(.*(Error|error)' "$work/console.log" >&2; then
    echo "check_loss_plot: $plot: errors on the console (above)" >&2
    status=1
fi

# 2. a screenshot of the plot alone, the window as tall as the SVG (the gradient panel makes it taller)
height=$(grep -o '<svg [^>]*height="[0-9]*"' "$plot" | head -n 1 | sed 's/.*height="\([0-9]*\)"/\1/')
rm -f "$shot"
url="file://$(cd "$(dirname "$plot")" && pwd)/$(basename "$plot")"
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-shot" \
    --screenshot="$shot" --window-size=820,"${height:-460}" "$url" >"$work/shot.log" 2>&1
if [ ! -s "$shot" ]; then
    echo "check_loss_plot: no screenshot written to $shot" >&2
    status=1
fi

if [ $status -eq 0 ]; then
    found=$(grep -o 'data-found="[^"]*"' "$work/dom.html" | sed 's/^data-found="//; s/"$//; s/&quot;/"/g')
    echo "check_loss_plot: $plot drawn: $found; screenshot $shot"
fi
exit $status
