"""animate.py NH SRCDIR TMP -- `animate` in a real browser (LANGUAGE.md 7.5).

Debian's Chromium, headless, opens the pages nh writes and prints their
DOM (`--dump-dom`) or takes a screenshot; this script reads them.

1. The rolling disk (examples/rolling_disk.nh, run on to t = 8):
   `animate > "disk.html"` opened at two times (`#t=...`, the page's way
   to show a moment) shows the samples nearest those times, two
   different frames; at each, every point of the rim -- built here from
   the centre, the axis and the radius that `table` prints for the same
   sample, projected by this script's own camera (a look-at with z up,
   not nh's formulas) -- lies on the ellipse the page drew, the spoke's
   ends and the contact point are where the projection puts them, and
   the contact's trail runs through every sample so far.  The same with
   another view.  Opened without a time it plays at once at K times real
   time (Chromium's virtual time runs its clock) and stops at the end.  The two screenshots differ and are not blank.  No
   address in the page: no `http`, `src=`, `href=`.
2. `animate > "disk.svg"`: well-formed XML whose SMIL values at sample k
   are the page's frame k; played by Chromium (its SMIL clock set by a
   small harness page), the rim's translation at time tau is the sample
   shown from tau on.
3. Every example that draws itself animates: the page's script runs to
   the end (data-ready), one element per draw, every number finite, no
   address; and the SVG image is well-formed.
4. The notebook's part: two animations in one page play independently.
5. A notebook with an animation, exported by nbconvert, plays.
Prints FAIL lines and exits 1 on any failure.
"""

import html.parser
import json
import math
import os
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

NH, SRC, TMP = sys.argv[1:4]
EXAMPLES = os.path.join(SRC, "examples")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)
    return ok


def chromium(args, timeout=90):
    """Runs headless Chromium with a fresh profile; its stdout."""
    profile = os.path.join(TMP, "profile-%d" % len(os.listdir(TMP)))
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run",
           "--user-data-dir=" + profile] + args
    r = subprocess.run(["timeout", str(timeout)] + cmd, capture_output=True,
                       text=True)
    if r.returncode != 0:
        print("chromium exited with %d: %s" % (r.returncode, r.stderr[-2000:]))
    return r.stdout


def nh(name, *stmts, folder=EXAMPLES):
    """Runs example NAME (or nothing) and STMTS with -q; its stdout."""
    cmd = [NH, "-q"] + ([name] if name else [])
    for s in stmts:
        cmd += ["-e", s]
    r = subprocess.run(cmd, cwd=folder, capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise SystemExit("FAIL: nh %s %s: %s" % (name, stmts, r.stderr))
    return r.stdout


def csv_rows(text, header):
    """The rows of the CSV after the line HEADER in TEXT, as floats."""
    lines = text.splitlines()
    i = lines.index(header)
    rows = []
    for line in lines[i + 1:]:
        try:
            rows.append([float(x) for x in line.split(",")])
        except ValueError:
            break
    return rows


class Dom(html.parser.HTMLParser):
    """The elements of a dumped page: (tag, attributes, draw index of the
    enclosing <g data-draw>)."""

    def __init__(self):
        super().__init__()
        self.elements = []
        self.stack = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        draw = self.stack[-1] if self.stack else None
        if tag == "g" and "data-draw" in a:
            draw = int(a["data-draw"])
        self.elements.append((tag, a, draw))
        if tag not in ("meta", "input", "line", "ellipse", "circle",
                       "polyline", "br", "path", "rect"):
            self.stack.append(draw)

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        draw = self.stack[-1] if self.stack else None
        self.elements.append((tag, a, draw))

    def handle_endtag(self, tag):
        if tag not in ("meta", "input", "line", "ellipse", "circle",
                       "polyline", "br", "path", "rect") and self.stack:
            self.stack.pop()

    def find(self, cls=None, draw=None, tag=None):
        for t, a, d in self.elements:
            if (cls is None or cls in a.get("class", "").split()) and \
               (draw is None or d == draw) and (tag is None or t == tag):
                return a
        return None

    def root(self):
        return self.find(cls="nh-animation")


def dump(page, t=None):
    url = "file://" + page + ("#t=%r" % t if t is not None else "")
    d = Dom()
    d.feed(chromium(["--dump-dom", url]))
    return d


# ---- an independent camera --------------------------------------------


def camera(az, el):
    """Right and up of a camera looking from (az, el) degrees at the
    origin, z up: a look-at built from cross products."""
    a, e = math.radians(az), math.radians(el)
    eye = (math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e))
    up_world = (0.0, 0.0, 1.0)
    right = cross(up_world, eye)
    n = math.sqrt(dot(right, right))
    right = tuple(x / n for x in right)
    up = cross(eye, right)
    return right, up


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0])


def project(cam, p):
    right, up = cam
    return (dot(p, right), -dot(p, up))  # the page's y grows downwards


def ellipse_of(a):
    """cx, cy, rx, ry, angle (degrees) of an <ellipse>'s attributes."""
    m = re.match(r"rotate\(([-\d.e+]+) ([-\d.e+]+) ([-\d.e+]+)\)",
                 a.get("transform", ""))
    cx, cy = float(a["cx"]), float(a["cy"])
    check(m and abs(float(m.group(2)) - cx) < 1e-9
          and abs(float(m.group(3)) - cy) < 1e-9,
          "the rim turns about its centre: %r" % a.get("transform"))
    return cx, cy, float(a["rx"]), float(a["ry"]), float(m.group(1)) if m else 0


def on_ellipse(e, q):
    cx, cy, rx, ry, ang = e
    c, s = math.cos(math.radians(ang)), math.sin(math.radians(ang))
    dx, dy = q[0] - cx, q[1] - cy
    u, w = dx * c + dy * s, -dx * s + dy * c
    return (u / rx) ** 2 + (w / ry) ** 2


def rim_points(c, n, r, count=72):
    ln = math.sqrt(dot(n, n))
    u = tuple(x / ln for x in n)
    t = (1.0, 0.0, 0.0) if abs(u[0]) < 0.8 else (0.0, 1.0, 0.0)
    a = cross(u, t)
    la = math.sqrt(dot(a, a))
    a = tuple(x / la for x in a)
    b = cross(u, a)
    for j in range(count):
        ph = 2 * math.pi * j / count
        yield tuple(c[i] + r * (math.cos(ph) * a[i] + math.sin(ph) * b[i])
                    for i in range(3))


# ---- PNG ------------------------------------------------------------------


def png_pixels(path):
    """(width, height, rows of RGBA or RGB bytes) of an 8-bit PNG."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "%s is a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        ln, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + ln]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + ln
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    rows, prev, stride = [], bytearray(w * bpp), w * bpp
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def screenshot(page, t, name):
    out = os.path.join(TMP, name)
    chromium(["--screenshot=" + out, "--window-size=900,800",
              "file://%s#t=%r" % (page, t)])
    return png_pixels(out)


# ---- 1. the rolling disk ----------------------------------------------------

disk = os.path.join(TMP, "disk.html")
disk2 = os.path.join(TMP, "disk2.html")
disk_svg = os.path.join(TMP, "disk.svg")
COLS = ("t,G[1],G[2],G[3],n[1],n[2],n[3],r,s[1],s[2],s[3],Q[1],Q[2],Q[3]")
out = nh("rolling_disk.nh", "simulate to 8 step 0.02",
         "table " + COLS.replace(",", ", "),
         'animate > "%s"' % disk, 'animate speed 3 view 20, 65 > "%s"' % disk2,
         'animate > "%s"' % disk_svg)
rows = csv_rows(out, COLS)
check(len(rows) == 5 + 300, "the disk's samples: %d" % len(rows))
text = open(disk).read()
for bad in ("http", "src=", "href="):
    check(bad not in text, "no %r in disk.html" % bad)
check("<script src" not in text and "<link" not in text,
      "no outside script or style in disk.html")
# doc/limits.md: at most 16 bytes a number (the samples times 2 + disk 5 +
# line 4 + point 2 + trail 2), besides a fixed 6 KB and the draws' markup
# (their statements twice, and some 400 bytes each)
labels = ["draw disk G, n, r", "draw line G, G + r*s", "draw point Q trail"]
bound = (16 * len(rows) * (2 + 5 + 4 + 2 + 2) + 6144
         + sum(2 * len(l) + 400 for l in labels))
check(len(text.encode()) <= bound,
      "disk.html within its stated size: %d bytes, bound %d"
      % (len(text.encode()), bound))


def check_frame(page, az, el, k, label):
    """Opens PAGE at sample K's time and checks the drawing against
    rows[k] projected from (AZ, EL)."""
    row = rows[k]
    t, G, n, r, s, Q = (row[0], row[1:4], row[4:7], row[7], row[8:11],
                        row[11:14])
    d = dump(page, t)
    root = d.root()
    if not check(root and root.get("data-ready") == "1",
                 "%s: the page's script ran (data-ready)" % label):
        return None
    check(int(root["data-frame"]) == k,
          "%s: the page shows sample %s at t = %r, not %s"
          % (label, root["data-frame"], t, k))
    cam = camera(az, el)
    rim = d.find(cls="nh-rim", draw=0)
    e = ellipse_of(rim)
    scale = max(abs(x) for x in e[:3]) + 1
    c2 = project(cam, G)
    check(abs(e[0] - c2[0]) < 1e-6 * scale and abs(e[1] - c2[1]) < 1e-6 * scale,
          "%s: the rim's centre %r, the samples' %r" % (label, e[:2], c2))
    levels = [on_ellipse(e, project(cam, p)) for p in rim_points(G, n, r)]
    worst = max(abs(v - 1) for v in levels)
    check(worst < 1e-4,
          "%s: every point of the rim on the drawn ellipse (worst |level - 1| "
          "= %g)" % (label, worst))
    spoke = d.find(cls="nh-line", draw=1)
    a, b = project(cam, G), project(cam, [G[i] + r * s[i] for i in range(3)])
    got = [float(spoke[x]) for x in ("x1", "y1", "x2", "y2")]
    check(max(abs(g - w) for g, w in zip(got, a + b)) < 1e-6 * scale,
          "%s: the spoke %r where the samples put it %r" % (label, got, a + b))
    pt = d.find(cls="nh-point", draw=2)
    q = project(cam, Q)
    check(abs(float(pt["cx"]) - q[0]) < 1e-6 * scale
          and abs(float(pt["cy"]) - q[1]) < 1e-6 * scale,
          "%s: the contact point where the samples put it" % label)
    trail = d.find(cls="nh-trail", draw=2)
    pts = [tuple(map(float, p.split(","))) for p in trail["points"].split()]
    check(len(pts) == k + 1, "%s: the trail has the %d samples so far, not %d"
          % (label, k + 1, len(pts)))
    want = [project(cam, rr[11:14]) for rr in rows[:k + 1]]
    check(all(abs(p[0] - w[0]) < 1e-6 * scale and abs(p[1] - w[1]) < 1e-6 * scale
              for p, w in zip(pts, want)),
          "%s: the trail through the contact's samples" % label)
    return e


e1 = check_frame(disk, -60, 30, 60, "disk.html at sample 60")
e2 = check_frame(disk, -60, 30, 240, "disk.html at sample 240")
check(e1 and e2 and abs(e1[0] - e2[0]) + abs(e1[1] - e2[1]) > 0.1,
      "two times, two different frames: %r, %r" % (e1, e2))
check_frame(disk2, 20, 65, 150, "disk2.html (view 20, 65) at sample 150")
# Played: opened without #t= the page plays at once, at K times real
# time; Chromium's virtual time runs its clock.  After a budget of 1 s the
# page shows about K s into the run (the budget is not kept to the
# millisecond: it overran by 1 to 20% here, and the first tick of 15 ms
# starts the count); at the end it stops at the last sample.
for page, speed in ((disk, 1), (disk2, 3)):
    d = Dom()
    d.feed(chromium(["--virtual-time-budget=1000", "--dump-dom",
                     "file://" + page]))
    shown = float((d.root() or {}).get("data-t", "nan"))
    check(0.8 * speed <= shown <= 1.3 * speed,
          "%s played for 1 s at speed %g shows t = %r" % (page, speed, shown))
d = Dom()
d.feed(chromium(["--virtual-time-budget=20000", "--dump-dom",
                 "file://" + disk2]))
check((d.root() or {}).get("data-frame") == str(len(rows) - 1),
      "played past its end, the page stops at the last sample: %r"
      % (d.root() or {}).get("data-frame"))
w1, h1, p1, b1 = screenshot(disk, rows[60][0], "disk60.png")
w2, h2, p2, b2 = screenshot(disk, rows[240][0], "disk240.png")
inked = sum(1 for row in p1 for x in range(0, len(row), b1)
            if row[x:x + 3] != b"\xff\xff\xff")
changed = sum(1 for r1, r2 in zip(p1, p2) for x in range(0, len(r1), b1)
              if r1[x:x + 3] != r2[x:x + 3])
check(inked > 2000, "the screenshot is not blank: %d pixels drawn" % inked)
check(changed > 500, "two times, two different pictures: %d pixels differ"
      % changed)

# ---- 2. the SVG image -------------------------------------------------------

svg_text = open(disk_svg).read()
check(svg_text.count("http") == 1
      and 'xmlns="http://www.w3.org/2000/svg"' in svg_text,
      "the only address in disk.svg is its namespace's name")
check("<script" not in svg_text, "disk.svg has no script")
root = ET.fromstring(svg_text)
NS = "{http://www.w3.org/2000/svg}"
g0 = [g for g in root.iter(NS + "g") if g.get("data-draw") == "0"][0]
anims = [a for a in g0.iter(NS + "animateTransform")
         if a.get("type") == "translate"]
check(len(anims) == 1, "the rim's centre is animated")
vals = anims[0].get("values").replace("\n", "").split(";")
check(len(vals) == len(rows), "one value per sample: %d" % len(vals))
keyed = anims[0].get("keyTimes")
check(keyed is not None, "two runs' samples are unevenly spaced: keyTimes")
keys = [float(x) for x in keyed.split(";")]
check(keys[0] == 0 and all(b >= a for a, b in zip(keys, keys[1:])),
      "keyTimes start at 0 and never fall")
cam = camera(-60, 30)
for k in (0, 60, 240, len(rows) - 1):
    x, y = map(float, vals[k].split())
    c2 = project(cam, rows[k][1:4])
    check(abs(x - c2[0]) < 1e-6 and abs(y - c2[1]) < 1e-6,
          "disk.svg's centre at sample %d where the samples put it" % k)
# Played by Chromium: the SVG inline in a harness page that stops its
# clock at each tau and, once Chromium has updated the animations (a
# timer later: they are not updated while a script runs), reports the
# rim's translation there.
dur = float(anims[0].get("dur").rstrip("s"))
taus = [keys[k] * dur + 1e-4 for k in (3, 60, 240)]
harness = os.path.join(TMP, "harness.html")
with open(harness, "w") as f:
    f.write("<!DOCTYPE html><html><body>%s<script>\n"
            "var svg=document.querySelector('svg'),out=[],i=0,taus=[%s];\n"
            "var g=svg.querySelector('[data-draw=\"0\"]').querySelector('g');\n"
            "svg.pauseAnimations();\n"
            "function step(){\n"
            " if(i>0){var m=g.transform.animVal.getItem(0).matrix;"
            "out.push(m.e+' '+m.f);}\n"
            " if(i<taus.length){svg.setCurrentTime(taus[i]);i++;"
            "setTimeout(step,50);}\n"
            " else document.body.setAttribute('data-out',out.join(';'));\n"
            "}\n"
            "window.addEventListener('load',step);\n"
            "</script></body></html>\n"
            % (svg_text, ",".join(repr(t) for t in taus)))
d = Dom()
d.feed(chromium(["--virtual-time-budget=5000", "--dump-dom",
                 "file://" + harness]))
body = d.find(tag="body")
got = (body or {}).get("data-out", "").split(";")
check(len(got) == 3, "the harness read the SVG's clock: %r" % got)
for (k, tau), g in zip(zip((3, 60, 240), taus), got):
    if len(g.split()) != 2:
        break
    x, y = map(float, g.split())
    c2 = project(cam, rows[k][1:4])
    check(abs(x - c2[0]) < 1e-5 and abs(y - c2[1]) < 1e-5,
          "disk.svg played: at %gs it shows sample %d (%r, want %r)"
          % (tau, k, (x, y), c2))
# and rendered: not blank
out_png = os.path.join(TMP, "svg.png")
chromium(["--screenshot=" + out_png, "--window-size=820,640",
          "--virtual-time-budget=1000", "file://" + disk_svg])
w, h, px, bpp = png_pixels(out_png)
inked = sum(1 for row in px for x in range(0, len(row), bpp)
            if row[x:x + 3] != b"\xff\xff\xff")
check(inked > 2000, "disk.svg renders: %d pixels drawn" % inked)

# ---- 3. every example that draws itself --------------------------------------

EXAMPLES_RUN = [
    ("rolling_disk.nh", ["simulate to 8 step 0.02"], "", 3),
    ("rolling_sphere.nh", ["reset", "simulate to 10 step 0.02"], "", 2),
    ("euler_disk.nh", [], " view -60, 25", 4),
    ("rolling_disk_steady.nh", ["simulate to 1 step 0.005"], " view -60, 25",
     3),
    ("rattleback.nh", ["reset", "simulate to 5 step 0.01"], " view -60, 45",
     15),
    ("bicycle_model.nh", ["simulate to 3 step 0.01"], " view -80, 20", 12),
    ("bicycle.nh", ["simulate to 1 step 0.01"], " view -80, 20", 12),
]
for name, pre, view, ndraws in EXAMPLES_RUN:
    base = name[:-3]
    page = os.path.join(TMP, base + ".html")
    image = os.path.join(TMP, base + ".svg")
    model = nh(name, *(pre + ["animate%s > \"%s\"" % (view, page),
                              "animate%s > \"%s\"" % (view, image),
                              "show model"]))
    declared = [l for l in model.splitlines() if l.startswith("draw ")]
    check(len(declared) == ndraws, "%s declares %d draws: %d"
          % (name, ndraws, len(declared)))
    text = open(page).read()
    check("http" not in text and "src=" not in text and "href=" not in text,
          "%s: no address in the page" % name)
    d = dump(page, 0.5)
    root = d.root()
    check(root is not None and root.get("data-ready") == "1",
          "%s: the page's script ran" % name)
    draws = [a for t, a, _ in d.elements if t == "g" and "data-draw" in a]
    check(len(draws) == ndraws, "%s: one element per draw: %d"
          % (name, len(draws)))
    numeric = ("cx", "cy", "rx", "ry", "r", "x1", "y1", "x2", "y2")
    bad = [(t, k, v) for t, a, _ in d.elements for k, v in a.items()
           if k in numeric and not math.isfinite(float(v))]
    check(not bad, "%s: every number finite: %r" % (name, bad[:3]))
    try:
        ET.parse(image)
    except ET.ParseError as err:
        check(False, "%s: the SVG image is well-formed XML: %s" % (name, err))

# ---- 4. two parts in one page (a notebook) -----------------------------------

req = ('{"request":"execute","code":"coord x\\nkinetic T = x\'^2/2\\n'
       'initial x\' = 1\\ndraw point [x, 0, 0] trail\\nsimulate to 1 step 0.1\\n'
       'animate\\nanimate speed 2"}\n')
r = subprocess.run([NH, "--protocol"], input=req, capture_output=True,
                   text=True, timeout=60)
parts = [json.loads(l)["text"] for l in r.stdout.splitlines()
         if '"output":"html"' in l]
check(len(parts) == 2, "two animations, two html outputs: %d" % len(parts))
if len(parts) == 2:
    both = os.path.join(TMP, "both.html")
    with open(both, "w") as f:
        f.write("<!DOCTYPE html><html><body>%s%s</body></html>" % tuple(parts))
    d = dump(both, 1)
    roots = [a for t, a, _ in d.elements
             if "nh-animation" in a.get("class", "").split()]
    check(len(roots) == 2 and roots[0]["id"] != roots[1]["id"]
          and all(a.get("data-ready") == "1" and a.get("data-frame") == "10"
                  for a in roots),
          "both animations in one page run, each on its own: %r" % roots)
    # The controls, as a user works them: the first's slider moved to
    # 0.55 s shows t = 0.5 (paused); the second's Play (it stood at its
    # end, so it starts again from 0) played for 0.2 s at speed 2 shows
    # about t = 0.4, and the first has not moved.
    with open(both, "a") as f:
        f.write("<script>\nwindow.addEventListener('load',function(){\n"
                "var r=document.querySelectorAll('.nh-animation');\n"
                "var sl=r[0].querySelector('.nh-time');sl.value='0.55';\n"
                "sl.dispatchEvent(new Event('input'));\n"
                "r[1].querySelector('.nh-play').click();\n"
                "setTimeout(function(){r[1].querySelector('.nh-play').click();"
                "document.body.setAttribute('data-done','1');},200);});\n"
                "</script>\n")
    d = Dom()
    d.feed(chromium(["--virtual-time-budget=3000", "--dump-dom",
                     "file://" + both + "#t=1"]))
    roots = [a for t, a, _ in d.elements
             if "nh-animation" in a.get("class", "").split()]
    body = d.find(tag="body") or {}
    check(body.get("data-done") == "1", "the harness clicked")
    check(len(roots) == 2 and roots[0].get("data-t") == "0.5",
          "the slider moved to 0.55 shows t = 0.5: %r" % roots[:1])
    t2 = float(roots[1].get("data-t", "nan")) if len(roots) == 2 else math.nan
    check(0.3 <= t2 <= 0.5, "Play, then Pause 0.2 s later at speed 2: t = %r"
          % t2)

# ---- 5. a notebook exported by nbconvert plays ---------------------------------
# (where Debian's python3-nbconvert is installed: the notebook tests'
# packages; tests/notebook.sh runs the kernel itself)

# (tests/notebook.py beside this script is not Jupyter's `notebook`)
here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != here]
try:
    import nbformat
    from nbclient import NotebookClient
    import nbconvert
except ImportError:
    nbconvert = None
    print("note: no nbconvert: the exported notebook is not checked")
if nbconvert is not None:
    jd = os.path.join(TMP, "jupyter")
    env = dict(os.environ, JUPYTER_DATA_DIR=jd + "/data",
               JUPYTER_PATH=jd + "/data", JUPYTER_CONFIG_DIR=jd + "/config",
               JUPYTER_RUNTIME_DIR=jd + "/runtime", IPYTHONDIR=jd + "/ipython")
    os.environ.update(env)
    subprocess.run([NH, "--install-kernel", "--user"], check=True,
                   capture_output=True)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(
        "coord x\nkinetic T = x'^2/2\ninitial x' = 1\n"
        "draw point [x, 0, 0] trail\nsimulate to 2 step 0.1\nanimate"))
    NotebookClient(nb, kernel_name="nh", timeout=120,
                   startup_timeout=60).execute()
    ipynb = os.path.join(TMP, "anim.ipynb")
    nbformat.write(nb, ipynb)
    r = subprocess.run(["/usr/bin/python3", "-m", "nbconvert", "--to", "html",
                        ipynb], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "nbconvert --to html: %s" % r.stderr[-500:])
    d = dump(os.path.join(TMP, "anim.html"), 1)
    root = d.root()
    check(root is not None and root.get("data-ready") == "1"
          and root.get("data-frame") == "10",
          "the notebook exported by nbconvert plays: %r" % root)

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("animate: every check passed")
