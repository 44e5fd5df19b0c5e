/*
 * animate.c — `animate`'s pictures (animate.h, doc/animation.md).
 *
 * Every frame is projected here, once, into the numbers a picture needs
 * (a rim's ellipse, a ball's outline and mark, a segment's ends, a
 * point): the page and the image only show them, so what they show is
 * what this file computed, to the 7 significant digits written (a
 * millionth of a drawing that is a thousand pixels wide: the numbers
 * could not be told apart on any screen).
 *
 * The HTML page is one <svg> in the page's own coordinates (animate.h)
 * with one element per draw, placed at the first frame, and a script
 * that moves them: frame k is the last sample whose distance in time
 * from the first, summed along the run (sum |t_j - t_{j-1}|, so a run
 * backwards in time plays forwards too), is at most the time played
 * times the speed.  The time played is read from the clock
 * (performance.now) at every tick, so the speed is exact however the
 * ticks come; they come from a timer (every 15 ms), not from
 * requestAnimationFrame, which a browser that draws no frames (headless,
 * on virtual time: how tests/animate.sh checks the speed) never calls.  The page opened with `#t=VALUE` shows the sample
 * nearest to t = VALUE and waits (a test, or a link to a moment).
 *
 * The SVG image has no script: each animated attribute has an SMIL
 * <animate> (or <animateTransform>) with one value per frame, discrete
 * (sample k is shown from its time until the next one's), looping; an
 * attribute that never changes is written once.  A trail is the whole
 * path, of which a dash as long as the path so far is shown.
 *
 * Must not: write anything but the picture to OUT; write any address
 * (an `http` of any kind) into a page.
 */
#include "interp/run/animate.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

/* ---- geometry -------------------------------------------------------- */

size_t anim_inputs(anim_kind_t kind, bool mark)
{
    switch (kind) {
    case ANIM_DISK: return 7;
    case ANIM_SPHERE: return mark ? 7 : 4;
    case ANIM_LINE: return 6;
    case ANIM_POINT: return 3;
    }
    return 0;
}

/* disk: cx cy rx ry angle; sphere: cx cy R [mx my front erx ery eangle];
 * line: x1 y1 x2 y2; point: x y. */
size_t anim_outputs(anim_kind_t kind, bool mark)
{
    switch (kind) {
    case ANIM_DISK: return 5;
    case ANIM_SPHERE: return mark ? 9 : 3;
    case ANIM_LINE: return 4;
    case ANIM_POINT: return 2;
    }
    return 0;
}

size_t anim_frame_numbers(const anim_draw_t *draws, size_t ndraws)
{
    size_t n = 2;
    for (size_t i = 0; i < ndraws; i++)
        n += anim_outputs(draws[i].kind, draws[i].mark) +
             (draws[i].trail ? 2 : 0);
    return n;
}

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

void anim_view_init(anim_view_t *v, double az, double el)
{
    double a = az * M_PI / 180, e = el * M_PI / 180;
    double ca = cos(a), sa = sin(a), ce = cos(e), se = sin(e);
    v->d[0] = ce * ca;
    v->d[1] = ce * sa;
    v->d[2] = se;
    v->e1[0] = -sa;
    v->e1[1] = ca;
    v->e1[2] = 0;
    v->e2[0] = -se * ca;
    v->e2[1] = -se * sa;
    v->e2[2] = ce;
}

void anim_project(const anim_view_t *v, const double p[3], double out[2])
{
    out[0] = dot3(p, v->e1);
    out[1] = -dot3(p, v->e2);
}

void anim_ellipse(const anim_view_t *v, const double c[3], const double n[3],
                  double r, double out[5])
{
    anim_project(v, c, out);
    double len = sqrt(dot3(n, n)), u[3] = {n[0] / len, n[1] / len, n[2] / len};
    /* The rim's diameter along u x d lies in the screen's plane: drawn
     * at full length.  The one across it is foreshortened by |u.d|. */
    double a[3];
    cross3(u, v->d, a);
    double s = sqrt(dot3(a, a));
    double angle = 0;
    if (s > 1e-12) /* else the rim faces the viewer: a circle */
        angle = atan2(-dot3(a, v->e2), dot3(a, v->e1)) * 180 / M_PI;
    out[2] = r;
    out[3] = fmax(r * fabs(dot3(u, v->d)), r * 1e-6);
    out[4] = angle;
}

/* Draw D's numbers at frame K (IN: its inputs) projected into OUT. */
static void project_draw(const anim_view_t *v, const anim_draw_t *d,
                         const double *in, double *out)
{
    switch (d->kind) {
    case ANIM_DISK:
        anim_ellipse(v, in, in + 3, in[6], out);
        break;
    case ANIM_SPHERE: {
        anim_project(v, in, out);
        out[2] = in[3];
        if (!d->mark)
            break;
        const double *m = in + 4;
        double len = sqrt(dot3(m, m)), p[3], e[5];
        for (int i = 0; i < 3; i++)
            p[i] = in[i] + in[3] * m[i] / len;
        anim_project(v, p, out + 3);
        out[5] = dot3(m, v->d) >= 0 ? 1 : 0; /* on the near half */
        /* the great circle across the mark: it shows the ball turn about
         * axes the mark alone would hide */
        anim_ellipse(v, in, m, in[3], e);
        out[6] = e[2];
        out[7] = e[3];
        out[8] = e[4];
        break;
    }
    case ANIM_LINE:
        anim_project(v, in, out);
        anim_project(v, in + 3, out + 2);
        break;
    case ANIM_POINT:
        anim_project(v, in, out);
        break;
    }
}

/* ---- the projected scene --------------------------------------------- */

typedef struct proj {
    size_t n;        /* frames */
    double **f;      /* per draw: n × anim_outputs */
    size_t *width;   /* per draw: anim_outputs */
    double x0, y0, w, h; /* the viewBox */
    double sw;       /* stroke width, in the same units */
    double *s;       /* n: time along the run from the first sample */
} proj_t;

static void bbox_add(double *b, double x, double y, double r)
{
    b[0] = fmin(b[0], x - r);
    b[1] = fmin(b[1], y - r);
    b[2] = fmax(b[2], x + r);
    b[3] = fmax(b[3], y + r);
}

static void project_scene(const anim_scene_t *sc, proj_t *p)
{
    anim_view_t v;
    anim_view_init(&v, sc->az, sc->el);
    p->n = sc->nframes;
    p->f = xcalloc(sc->ndraws, sizeof *p->f);
    p->width = xcalloc(sc->ndraws, sizeof *p->width);
    double b[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < sc->ndraws; i++) {
        const anim_draw_t *d = &sc->draws[i];
        size_t win = anim_inputs(d->kind, d->mark),
               wout = anim_outputs(d->kind, d->mark);
        p->width[i] = wout;
        p->f[i] = xcalloc(p->n * wout + 1, sizeof *p->f[i]);
        for (size_t k = 0; k < p->n; k++) {
            double *o = p->f[i] + k * wout;
            project_draw(&v, d, d->v + k * win, o);
            /* a rim or a ball lies within its radius of its centre */
            double r = d->kind == ANIM_DISK || d->kind == ANIM_SPHERE ? o[2]
                                                                      : 0;
            bbox_add(b, o[0], o[1], r);
            if (d->kind == ANIM_LINE)
                bbox_add(b, o[2], o[3], 0);
        }
    }
    double w = b[2] - b[0], h = b[3] - b[1], size = fmax(w, h);
    if (!(size > 0)) /* one point that never moves */
        size = fmax(1, fmax(fabs(b[0]), fabs(b[1])));
    /* not narrower than 1:3 either way, and a margin all round */
    w = fmax(w, size / 3);
    h = fmax(h, size / 3);
    double cx = (b[0] + b[2]) / 2, cy = (b[1] + b[3]) / 2, pad = 0.08 * size;
    p->w = w + 2 * pad;
    p->h = h + 2 * pad;
    p->x0 = cx - p->w / 2;
    p->y0 = cy - p->h / 2;
    p->sw = fmax(p->w, p->h) / 400;
    p->s = xcalloc(p->n, sizeof *p->s);
    for (size_t k = 1; k < p->n; k++)
        p->s[k] = p->s[k - 1] + fabs(sc->t[k] - sc->t[k - 1]);
}

static void proj_free(proj_t *p, size_t ndraws)
{
    for (size_t i = 0; i < ndraws; i++)
        free(p->f[i]);
    free(p->f);
    free(p->width);
    free(p->s);
}

/* ---- writing ----------------------------------------------------------- */

static void put_num(FILE *o, double x)
{
    fprintf(o, "%.7g", x == 0 ? 0.0 : x); /* no "-0" */
}

/* TEXT for an attribute's value or an element's content. */
static void put_escaped(FILE *o, const char *text)
{
    for (const char *c = text ? text : ""; *c; c++)
        switch (*c) {
        case '&': fputs("&amp;", o); break;
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '"': fputs("&quot;", o); break;
        case '\'': fputs("&#39;", o); break;
        case '\n': fputc(' ', o); break;
        default: fputc(*c, o);
        }
}

/* Colours by kind, so that a shape built of many draws (a polygon of
 * lines) reads as one: rims and balls blue and teal, lines dark grey,
 * points red, green, orange and brown, each kind cycling through its
 * own. */
static const char *draw_colour(const anim_scene_t *sc, size_t i)
{
    static const char *const round[] = {"#1f77b4", "#17becf", "#9467bd"},
                             *const dots[] = {"#d62728", "#2ca02c", "#ff7f0e",
                                              "#8c564b"};
    anim_kind_t k = sc->draws[i].kind;
    if (k == ANIM_LINE)
        return "#444";
    size_t n = 0; /* draws of its family before it */
    for (size_t j = 0; j < i; j++)
        n += (sc->draws[j].kind == ANIM_POINT) == (k == ANIM_POINT) &&
             sc->draws[j].kind != ANIM_LINE;
    return k == ANIM_POINT ? dots[n % 4] : round[n % 3];
}

static const char *kind_name(anim_kind_t k)
{
    switch (k) {
    case ANIM_DISK: return "disk";
    case ANIM_SPHERE: return "sphere";
    case ANIM_LINE: return "line";
    case ANIM_POINT: return "point";
    }
    return "?";
}

/* The small x, y, z of the inertial frame in the lower left corner. */
static void put_axes(FILE *o, const anim_scene_t *sc, const proj_t *p)
{
    anim_view_t v;
    anim_view_init(&v, sc->az, sc->el);
    double a = 0.06 * fmax(p->w, p->h), ox = p->x0 + 1.6 * a,
           oy = p->y0 + p->h - 1.6 * a;
    fputs("<g class=\"nh-axes\" stroke=\"#888\" fill=\"#666\">\n", o);
    const char *names = "xyz";
    for (int i = 0; i < 3; i++) {
        double unit[3] = {0, 0, 0}, q[2];
        unit[i] = 1;
        anim_project(&v, unit, q);
        fputs("<line x1=\"", o);
        put_num(o, ox);
        fputs("\" y1=\"", o);
        put_num(o, oy);
        fputs("\" x2=\"", o);
        put_num(o, ox + a * q[0]);
        fputs("\" y2=\"", o);
        put_num(o, oy + a * q[1]);
        fputs("\" stroke-width=\"", o);
        put_num(o, p->sw);
        fputs("\"/><text x=\"", o);
        put_num(o, ox + 1.3 * a * q[0] - 0.12 * a);
        fputs("\" y=\"", o);
        put_num(o, oy + 1.3 * a * q[1] + 0.15 * a);
        fputs("\" font-size=\"", o);
        put_num(o, 0.45 * a);
        fprintf(o, "\" stroke=\"none\">%c</text>\n", names[i]);
    }
    fputs("</g>\n", o);
}

/* An attribute NAME="VALUE". */
static void put_attr(FILE *o, const char *name, double value)
{
    fprintf(o, " %s=\"", name);
    put_num(o, value);
    fputc('"', o);
}

static void put_rotate(FILE *o, double a, double cx, double cy)
{
    fputs(" transform=\"rotate(", o);
    put_num(o, a);
    fputc(' ', o);
    put_num(o, cx);
    fputc(' ', o);
    put_num(o, cy);
    fputs(")\"", o);
}

/* The element of draw I at frame 0, for the page (ids: none; the
 * script finds draws by data-draw). */
static void put_draw_html(FILE *o, const anim_scene_t *sc, const proj_t *p,
                          size_t i)
{
    const anim_draw_t *d = &sc->draws[i];
    const double *f = p->f[i];
    const char *col = draw_colour(sc, i);
    double dot = 2.5 * p->sw;
    fprintf(o, "<g data-draw=\"%zu\" data-kind=\"%s\" stroke=\"%s\" "
               "fill=\"none\" stroke-width=\"",
            i, kind_name(d->kind), col);
    put_num(o, p->sw);
    fputs("\"><title>", o);
    put_escaped(o, d->label);
    fputs("</title>\n", o);
    switch (d->kind) {
    case ANIM_DISK:
        fprintf(o, "<ellipse class=\"nh-rim\" fill=\"%s\" fill-opacity=\"0.12\"",
                col);
        put_attr(o, "cx", f[0]);
        put_attr(o, "cy", f[1]);
        put_attr(o, "rx", f[2]);
        put_attr(o, "ry", f[3]);
        put_rotate(o, f[4], f[0], f[1]);
        fputs("/>\n", o);
        break;
    case ANIM_SPHERE:
        fprintf(o, "<circle class=\"nh-ball\" fill=\"%s\" fill-opacity=\"0.08\"",
                col);
        put_attr(o, "cx", f[0]);
        put_attr(o, "cy", f[1]);
        put_attr(o, "r", f[2]);
        fputs("/>\n", o);
        if (d->mark) {
            fputs("<ellipse class=\"nh-equator\" stroke-opacity=\"0.5\"", o);
            put_attr(o, "cx", f[0]);
            put_attr(o, "cy", f[1]);
            put_attr(o, "rx", f[6]);
            put_attr(o, "ry", f[7]);
            put_rotate(o, f[8], f[0], f[1]);
            fprintf(o, "/>\n<circle class=\"nh-mark\" fill=\"%s\"", col);
            put_attr(o, "cx", f[3]);
            put_attr(o, "cy", f[4]);
            put_attr(o, "r", 1.6 * dot);
            put_attr(o, "fill-opacity", f[5]);
            fputs("/>\n", o);
        }
        break;
    case ANIM_LINE:
        fputs("<line class=\"nh-line\" stroke-linecap=\"round\"", o);
        put_attr(o, "x1", f[0]);
        put_attr(o, "y1", f[1]);
        put_attr(o, "x2", f[2]);
        put_attr(o, "y2", f[3]);
        fputs("/>\n", o);
        break;
    case ANIM_POINT:
        if (d->trail) {
            fputs("<polyline class=\"nh-trail\" stroke-opacity=\"0.6\" "
                  "stroke-linejoin=\"round\" points=\"",
                  o);
            put_num(o, f[0]);
            fputc(',', o);
            put_num(o, f[1]);
            fputs("\"/>\n", o);
        }
        fprintf(o, "<circle class=\"nh-point\" fill=\"%s\"", col);
        put_attr(o, "cx", f[0]);
        put_attr(o, "cy", f[1]);
        put_attr(o, "r", dot);
        fputs("/>\n", o);
        break;
    }
    fputs("</g>\n", o);
}

/* The page's script: it reads the numbers (T, S, D, K) written before it
 * inside the same function, and the elements under ROOT. */
static const char page_script[] =
    "var n=T.length,total=S[n-1];\n"
    "var els=root.querySelectorAll('[data-draw]');\n"
    "var btn=root.querySelector('.nh-play'),slider=root.querySelector('.nh-time'),"
    "label=root.querySelector('.nh-t');\n"
    "var trails=[];\n"
    "for(var i=0;i<els.length;i++){\n"
    " var pl=els[i].querySelector('.nh-trail');\n"
    " if(!pl){trails.push(null);continue;}\n"
    " var d=D[i],parts=[],off=[],len=0;\n"
    " for(var k=0;k<n;k++){var s=(k?' ':'')+d[2*k]+','+d[2*k+1];"
    "parts.push(s);len+=s.length;off.push(len);}\n"
    " trails.push({el:pl,full:parts.join(''),off:off});\n"
    "}\n"
    "function set(e,a,v){e.setAttribute(a,v);}\n"
    "function rot(e,a,x,y){e.setAttribute('transform','rotate('+a+' '+x+' '+y+')');}\n"
    "var frame=-1,pos=0,playing=false,last=null;\n"
    "function show(k){\n"
    " frame=k;\n"
    " for(var i=0;i<els.length;i++){\n"
    "  var g=els[i],d=D[i],kind=g.getAttribute('data-kind'),e;\n"
    "  if(kind==='disk'){var o=5*k;e=g.querySelector('.nh-rim');"
    "set(e,'cx',d[o]);set(e,'cy',d[o+1]);set(e,'rx',d[o+2]);"
    "set(e,'ry',d[o+3]);rot(e,d[o+4],d[o],d[o+1]);}\n"
    "  else if(kind==='sphere'){var w=d.length/n,o=w*k;"
    "e=g.querySelector('.nh-ball');set(e,'cx',d[o]);set(e,'cy',d[o+1]);"
    "set(e,'r',d[o+2]);\n"
    "   if(w>3){e=g.querySelector('.nh-equator');set(e,'cx',d[o]);"
    "set(e,'cy',d[o+1]);set(e,'rx',d[o+6]);set(e,'ry',d[o+7]);"
    "rot(e,d[o+8],d[o],d[o+1]);\n"
    "    e=g.querySelector('.nh-mark');set(e,'cx',d[o+3]);set(e,'cy',d[o+4]);"
    "set(e,'fill-opacity',d[o+5]);}}\n"
    "  else if(kind==='line'){var o=4*k;e=g.querySelector('.nh-line');"
    "set(e,'x1',d[o]);set(e,'y1',d[o+1]);set(e,'x2',d[o+2]);set(e,'y2',d[o+3]);}\n"
    "  else if(kind==='point'){var o=2*k;e=g.querySelector('.nh-point');"
    "set(e,'cx',d[o]);set(e,'cy',d[o+1]);\n"
    "   if(trails[i])set(trails[i].el,'points',trails[i].full.substring(0,trails[i].off[k]));}\n"
    " }\n"
    " root.setAttribute('data-frame',k);root.setAttribute('data-t',T[k]);\n"
    " label.textContent='t = '+(+T[k].toPrecision(6));\n"
    "}\n"
    "function at(s){var lo=0,hi=n-1,eps=1e-12*Math.max(1,total);\n"
    " while(lo<hi){var m=(lo+hi+1)>>1;if(S[m]<=s+eps)lo=m;else hi=m-1;}return lo;}\n"
    "function stop(){playing=false;btn.textContent='Play';}\n"
    "function tick(){\n"
    " if(!playing)return;\n"
    " var now=performance.now();\n"
    " if(last!==null)pos+=(now-last)/1000*K;\n"
    " last=now;\n"
    " if(pos>=total){pos=total;stop();}\n"
    " slider.value=pos;\n"
    " var k=at(pos);if(k!==frame)show(k);\n"
    " if(playing)setTimeout(tick,15);\n"
    "}\n"
    "function play(){if(pos>=total)pos=0;playing=true;last=null;"
    "btn.textContent='Pause';tick();}\n"
    "btn.addEventListener('click',function(){if(playing)stop();else play();});\n"
    "slider.addEventListener('input',function(){stop();pos=parseFloat(slider.value);"
    "show(at(pos));});\n"
    "slider.max=total;slider.step='any';\n"
    "var m=/^#t=(.*)$/.exec(location.hash),start=0;\n"
    "if(m){var want=parseFloat(decodeURIComponent(m[1])),best=Infinity;\n"
    " for(var k=0;k<n;k++){var dd=Math.abs(T[k]-want);if(dd<best){best=dd;start=k;}}}\n"
    "pos=S[start];slider.value=pos;show(start);\n"
    "if(!m&&total>0)play();else stop();\n"
    "root.setAttribute('data-ready','1');\n";

static void put_array(FILE *o, const double *v, size_t n)
{
    fputc('[', o);
    for (size_t k = 0; k < n; k++) {
        if (k)
            fputc(',', o);
        if (k % 16 == 15)
            fputc('\n', o);
        put_num(o, v[k]);
    }
    fputc(']', o);
}

static void put_viewbox(FILE *o, const proj_t *p)
{
    fputs(" viewBox=\"", o);
    put_num(o, p->x0);
    fputc(' ', o);
    put_num(o, p->y0);
    fputc(' ', o);
    put_num(o, p->w);
    fputc(' ', o);
    put_num(o, p->h);
    fputc('"', o);
}

static void write_html(const anim_scene_t *sc, const proj_t *p, bool whole,
                       const char *id, FILE *o)
{
    if (whole)
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
              "<meta charset=\"utf-8\">\n"
              "<meta name=\"generator\" content=\"nh animate\">\n"
              "<title>nh: animation</title>\n</head>\n<body>\n",
              o);
    fprintf(o, "<div class=\"nh-animation\" id=\"%s\">\n<style>\n", id);
    fprintf(o,
            "#%s{font-family:sans-serif;font-size:14px;max-width:820px}\n"
            "#%s svg{display:block;width:100%%;height:auto;max-height:80vh;"
            "background:#fff;border:1px solid #ddd}\n"
            "#%s .nh-ctl{display:flex;align-items:center;gap:8px;margin:6px 0}\n"
            "#%s .nh-time{flex:1}\n"
            "#%s .nh-t{min-width:9em;font-variant-numeric:tabular-nums}\n"
            "#%s ul{list-style:none;padding:0;margin:4px 0;color:#333}\n",
            id, id, id, id, id, id);
    fputs("</style>\n<svg role=\"img\" preserveAspectRatio=\"xMidYMid meet\"",
          o);
    put_viewbox(o, p);
    fputs(">\n", o);
    put_axes(o, sc, p);
    for (size_t i = 0; i < sc->ndraws; i++)
        put_draw_html(o, sc, p, i);
    fputs("</svg>\n<div class=\"nh-ctl\"><button class=\"nh-play\" "
          "type=\"button\">Play</button><input class=\"nh-time\" "
          "type=\"range\" min=\"0\" max=\"0\" value=\"0\" "
          "aria-label=\"time\"><span class=\"nh-t\">t = </span>"
          "<span class=\"nh-speed\">",
          o);
    fputs("&#215; ", o);
    put_num(o, sc->speed);
    fputs("</span></div>\n<ul>\n", o);
    for (size_t i = 0; i < sc->ndraws; i++) {
        fprintf(o, "<li><span style=\"color:%s\">&#9632;</span> ",
                draw_colour(sc, i));
        put_escaped(o, sc->draws[i].label);
        fputs("</li>\n", o);
    }
    fputs("</ul>\n<script>\n(function(){\n", o);
    fprintf(o, "var root=document.getElementById('%s');\nvar K=", id);
    put_num(o, sc->speed);
    fputs(";\nvar T=", o);
    put_array(o, sc->t, p->n);
    fputs(";\nvar S=", o);
    put_array(o, p->s, p->n);
    fputs(";\nvar D=[\n", o);
    for (size_t i = 0; i < sc->ndraws; i++) {
        put_array(o, p->f[i], p->n * p->width[i]);
        fputs(i + 1 < sc->ndraws ? ",\n" : "\n", o);
    }
    fputs("];\n", o);
    fputs(page_script, o);
    fputs("})();\n</script>\n</div>\n", o);
    if (whole)
        fputs("</body>\n</html>\n", o);
}

/* ---- SMIL -------------------------------------------------------------- */

typedef struct timing {
    double dur;        /* seconds shown for the whole run */
    char *keytimes;    /* NULL: the samples are evenly spaced */
    size_t n;
} timing_t;

static void timing_init(timing_t *tm, const anim_scene_t *sc, const proj_t *p)
{
    size_t n = p->n;
    double total = p->s[n - 1];
    tm->n = n;
    tm->keytimes = NULL;
    tm->dur = 0;
    if (n < 2 || !(total > 0))
        return; /* one picture */
    /* Each sample is shown until the next one's time; the last one for
     * as long as the one before it. */
    double last = p->s[n - 1] - p->s[n - 2];
    if (!(last > 0))
        last = total / (double)(n - 1);
    double span = total + last;
    tm->dur = span / sc->speed;
    double h = total / (double)(n - 1);
    bool even = true;
    for (size_t k = 0; k < n && even; k++)
        even = fabs(p->s[k] - (double)k * h) <= 1e-9 * total;
    if (even)
        return;
    strbuf_t b;
    strbuf_init(&b);
    for (size_t k = 0; k < n; k++)
        strbuf_addf(&b, "%s%.9g", k ? ";" : "", p->s[k] / span);
    tm->keytimes = strbuf_take(&b);
}

/* An animation of attribute ATTR of the element just opened: its values
 * are, per frame k, the numbers F[k*W + OFF[j]] (j < NOFF) separated by
 * spaces.  ELEMENT is "animate" or "animateTransform" (TYPE its type).
 * Nothing when they never change, or the run is one picture. */
static void put_smil(FILE *o, const timing_t *tm, const char *attr,
                     const char *type, const double *f, size_t w,
                     const size_t *off, size_t noff)
{
    if (tm->dur <= 0)
        return;
    bool changes = false;
    for (size_t k = 1; k < tm->n && !changes; k++)
        for (size_t j = 0; j < noff; j++)
            if (f[k * w + off[j]] != f[off[j]]) {
                changes = true;
                break;
            }
    if (!changes)
        return;
    fprintf(o, "<%s attributeName=\"%s\"", type ? "animateTransform" : "animate",
            attr);
    if (type)
        fprintf(o, " type=\"%s\"", type);
    fprintf(o, " dur=\"%.9gs\" repeatCount=\"indefinite\" calcMode=\"discrete\"",
            tm->dur);
    if (tm->keytimes)
        fprintf(o, " keyTimes=\"%s\"", tm->keytimes);
    fputs(" values=\"", o);
    for (size_t k = 0; k < tm->n; k++) {
        if (k)
            fputc(';', o);
        if (k % 16 == 15)
            fputc('\n', o);
        for (size_t j = 0; j < noff; j++) {
            if (j)
                fputc(' ', o);
            put_num(o, f[k * w + off[j]]);
        }
    }
    fputs("\"/>\n", o);
}

static void put_translate(FILE *o, double x, double y)
{
    fputs(" transform=\"translate(", o);
    put_num(o, x);
    fputc(' ', o);
    put_num(o, y);
    fputs(")\"", o);
}

static void put_draw_svg(FILE *o, const anim_scene_t *sc, const proj_t *p,
                         const timing_t *tm, size_t i)
{
    const anim_draw_t *d = &sc->draws[i];
    const double *f = p->f[i];
    size_t w = p->width[i];
    const char *col = draw_colour(sc, i);
    double dot = 2.5 * p->sw;
    static const size_t o0[] = {0}, o1[] = {1}, o2[] = {2}, o3[] = {3},
                        o4[] = {4}, o5[] = {5}, o6[] = {6}, o7[] = {7},
                        o8[] = {8}, o01[] = {0, 1};
    fprintf(o, "<g data-draw=\"%zu\" data-kind=\"%s\" stroke=\"%s\" "
               "fill=\"none\" stroke-width=\"",
            i, kind_name(d->kind), col);
    put_num(o, p->sw);
    fputs("\"><title>", o);
    put_escaped(o, d->label);
    fputs("</title>\n", o);
    switch (d->kind) {
    case ANIM_DISK:
        fputs("<g", o);
        put_translate(o, f[0], f[1]);
        fputs(">", o);
        put_smil(o, tm, "transform", "translate", f, w, o01, 2);
        fputs("<g transform=\"rotate(", o);
        put_num(o, f[4]);
        fputs(")\">", o);
        put_smil(o, tm, "transform", "rotate", f, w, o4, 1);
        fprintf(o, "<ellipse fill=\"%s\" fill-opacity=\"0.12\" cx=\"0\" "
                   "cy=\"0\"",
                col);
        put_attr(o, "rx", f[2]);
        put_attr(o, "ry", f[3]);
        fputs(">\n", o);
        put_smil(o, tm, "rx", NULL, f, w, o2, 1);
        put_smil(o, tm, "ry", NULL, f, w, o3, 1);
        fputs("</ellipse></g></g>\n", o);
        break;
    case ANIM_SPHERE:
        fputs("<g", o);
        put_translate(o, f[0], f[1]);
        fputs(">", o);
        put_smil(o, tm, "transform", "translate", f, w, o01, 2);
        fprintf(o, "<circle fill=\"%s\" fill-opacity=\"0.08\" cx=\"0\" "
                   "cy=\"0\"",
                col);
        put_attr(o, "r", f[2]);
        fputs(">", o);
        put_smil(o, tm, "r", NULL, f, w, o2, 1);
        fputs("</circle>\n", o);
        if (d->mark) {
            fputs("<g transform=\"rotate(", o);
            put_num(o, f[8]);
            fputs(")\">", o);
            put_smil(o, tm, "transform", "rotate", f, w, o8, 1);
            fputs("<ellipse stroke-opacity=\"0.5\" cx=\"0\" cy=\"0\"", o);
            put_attr(o, "rx", f[6]);
            put_attr(o, "ry", f[7]);
            fputs(">\n", o);
            put_smil(o, tm, "rx", NULL, f, w, o6, 1);
            put_smil(o, tm, "ry", NULL, f, w, o7, 1);
            fputs("</ellipse></g>\n", o);
        }
        fputs("</g>\n", o);
        if (d->mark) {
            fprintf(o, "<circle fill=\"%s\"", col);
            put_attr(o, "cx", f[3]);
            put_attr(o, "cy", f[4]);
            put_attr(o, "r", 1.6 * dot);
            put_attr(o, "fill-opacity", f[5]);
            fputs(">\n", o);
            put_smil(o, tm, "cx", NULL, f, w, o3, 1);
            put_smil(o, tm, "cy", NULL, f, w, o4, 1);
            put_smil(o, tm, "fill-opacity", NULL, f, w, o5, 1);
            fputs("</circle>\n", o);
        }
        break;
    case ANIM_LINE:
        fputs("<line stroke-linecap=\"round\"", o);
        put_attr(o, "x1", f[0]);
        put_attr(o, "y1", f[1]);
        put_attr(o, "x2", f[2]);
        put_attr(o, "y2", f[3]);
        fputs(">\n", o);
        put_smil(o, tm, "x1", NULL, f, w, o0, 1);
        put_smil(o, tm, "y1", NULL, f, w, o1, 1);
        put_smil(o, tm, "x2", NULL, f, w, o2, 1);
        put_smil(o, tm, "y2", NULL, f, w, o3, 1);
        fputs("</line>\n", o);
        break;
    case ANIM_POINT:
        if (d->trail && tm->dur > 0) {
            /* the whole path; a dash of the length so far is shown:
             * dasharray L L and offset L - l_k leave [0, l_k) drawn */
            double *len = xcalloc(p->n, sizeof *len);
            for (size_t k = 1; k < p->n; k++)
                len[k] = len[k - 1] + hypot(f[2 * k] - f[2 * k - 2],
                                            f[2 * k + 1] - f[2 * k - 1]);
            double total = len[p->n - 1];
            /* a little longer, so that rounding never shows the start
             * of the next dash */
            double L = total * (1 + 1e-6) + p->sw;
            fputs("<polyline stroke-opacity=\"0.6\" stroke-linejoin=\"round\" "
                  "points=\"",
                  o);
            for (size_t k = 0; k < p->n; k++) {
                if (k)
                    fputc(k % 16 == 15 ? '\n' : ' ', o);
                put_num(o, f[2 * k]);
                fputc(',', o);
                put_num(o, f[2 * k + 1]);
            }
            fputs("\" stroke-dasharray=\"", o);
            put_num(o, L);
            fputc(' ', o);
            put_num(o, L);
            fputc('"', o);
            for (size_t k = 0; k < p->n; k++)
                len[k] = L - len[k];
            put_attr(o, "stroke-dashoffset", len[0]);
            fputs(">\n", o);
            put_smil(o, tm, "stroke-dashoffset", NULL, len, 1, o0, 1);
            fputs("</polyline>\n", o);
            free(len);
        }
        fprintf(o, "<circle fill=\"%s\"", col);
        put_attr(o, "cx", f[0]);
        put_attr(o, "cy", f[1]);
        put_attr(o, "r", dot);
        fputs(">\n", o);
        put_smil(o, tm, "cx", NULL, f, w, o0, 1);
        put_smil(o, tm, "cy", NULL, f, w, o1, 1);
        fputs("</circle>\n", o);
        break;
    }
    fputs("</g>\n", o);
}

static void write_svg(const anim_scene_t *sc, const proj_t *p, FILE *o)
{
    double W = 800, H = 800 * p->h / p->w;
    if (H > 800) {
        W = 800 * p->w / p->h;
        H = 800;
    }
    /* An SVG document must name its namespace; that name is not fetched. */
    fputs("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"", o);
    put_attr(o, "width", W);
    put_attr(o, "height", H);
    put_viewbox(o, p);
    fputs(">\n<title>nh: animation</title>\n<desc>", o);
    for (size_t i = 0; i < sc->ndraws; i++) {
        if (i)
            fputs("; ", o);
        put_escaped(o, sc->draws[i].label);
    }
    fputs("</desc>\n<rect fill=\"#fff\"", o);
    put_attr(o, "x", p->x0);
    put_attr(o, "y", p->y0);
    put_attr(o, "width", p->w);
    put_attr(o, "height", p->h);
    fputs("/>\n", o);
    put_axes(o, sc, p);
    timing_t tm;
    timing_init(&tm, sc, p);
    for (size_t i = 0; i < sc->ndraws; i++)
        put_draw_svg(o, sc, p, &tm, i);
    free(tm.keytimes);
    fputs("</svg>\n", o);
}

void anim_write(const anim_scene_t *sc, anim_format_t format, const char *id,
                FILE *out)
{
    proj_t p;
    project_scene(sc, &p);
    if (format == ANIM_SVG)
        write_svg(sc, &p, out);
    else
        write_html(sc, &p, format == ANIM_HTML, id ? id : "nh-animation",
                   out);
    proj_free(&p, sc->ndraws);
}
