/*
 * animate.h — the picture end of `animate` (LANGUAGE.md §7.5): the draws'
 * numbers at every recorded sample, projected into a 3D orthographic view
 * and written as a self-contained HTML page (inline SVG driven by inline
 * JavaScript: play/pause, a time slider, real time times the speed) or as
 * an animated SVG image (SMIL, no script).  doc/animation.md says what
 * the files hold and how a page is read by a program (its DOM).
 *
 * The session evaluates the draws' expressions at the samples and checks
 * them (finite, a radius not negative, a normal and a mark not zero);
 * this module only projects and writes what it is given: it prints
 * nothing but the file's text, reads no file and asks for nothing over a
 * network (no address of any kind appears in a page; an SVG image names
 * only its XML namespace).
 *
 * The view (anim_view_t): azimuth AZ and elevation EL in degrees, z up.
 * The viewer looks from the direction
 *     d = (cos EL cos AZ, cos EL sin AZ, sin EL)
 * (towards the viewer), with the screen's right e1 = (-sin AZ, cos AZ, 0)
 * and its up e2 = d x e1 ... written out: e2 = (-sin EL cos AZ,
 * -sin EL sin AZ, cos EL), so e1 x e2 = d (right-handed).  A point p is
 * drawn at (p.e1, -p.e2): SVG's y grows downwards.  These are the page's
 * own coordinates (its viewBox is in them), so a program that reads the
 * page reads projected model units.
 *
 * Ownership: everything is borrowed; nothing is kept after a call.
 * Must not: print except to the stream given; change the data.
 */
#ifndef NH_ANIMATE_H
#define NH_ANIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* LANGUAGE.md §7.5: the view when `animate` names none (matplotlib's
 * default: from the front right, above). */
#define ANIM_DEFAULT_AZ (-60.0)
#define ANIM_DEFAULT_EL 30.0
/* The numbers one file may hold (doc/limits.md): the samples times
 * anim_frame_numbers.  A number takes at most 16 bytes of a page (%.7g
 * and a separator), so a page stays under 16 MB (and shows whole in a
 * notebook, which shows 16 MiB) besides its fixed 6 KB; an SVG image
 * writes a time beside each changing value when the samples are not
 * evenly spaced: at most twice that. */
#define ANIM_MAX_NUMBERS 1000000u

typedef enum anim_kind {
    ANIM_DISK,   /* in: centre (3), normal (3), radius */
    ANIM_SPHERE, /* in: centre (3), radius [, mark (3): a direction] */
    ANIM_LINE,   /* in: one end (3), the other (3) */
    ANIM_POINT,  /* in: position (3) */
} anim_kind_t;

/* One draw: V holds, for each of the scene's frames, anim_inputs(KIND,
 * MARK) numbers in the order above (frame-major). */
typedef struct anim_draw {
    anim_kind_t kind;
    bool mark;         /* a sphere's mark */
    bool trail;        /* a point's path so far */
    const char *label; /* the statement as written: a tooltip */
    const double *v;
} anim_draw_t;

typedef struct anim_scene {
    size_t nframes;       /* >= 1 */
    const double *t;      /* nframes times, as recorded */
    size_t ndraws;        /* >= 1 */
    const anim_draw_t *draws;
    double az, el;        /* degrees; -90 <= el <= 90 */
    double speed;         /* > 0: model seconds per second shown */
} anim_scene_t;

typedef enum anim_format {
    ANIM_HTML,      /* a whole HTML document */
    ANIM_HTML_PART, /* the same as one <div> to put into a page (a
                       notebook's text/html output) */
    ANIM_SVG,       /* an SVG document animated by SMIL */
} anim_format_t;

/* The numbers a draw takes per sample (in) and writes per frame (out:
 * disk 5, sphere 3, or 9 with a mark, line 4, point 2). */
size_t anim_inputs(anim_kind_t kind, bool mark);
size_t anim_outputs(anim_kind_t kind, bool mark);
/* The numbers a frame of SC counts against ANIM_MAX_NUMBERS: 2 (its time,
 * and its time along the run), every draw's outputs, and 2 more for a
 * trail (the SVG image writes a trail's path besides its point). */
size_t anim_frame_numbers(const anim_draw_t *draws, size_t ndraws);

/* The view of azimuth AZ and elevation EL (degrees). */
typedef struct anim_view {
    double d[3], e1[3], e2[3];
} anim_view_t;
void anim_view_init(anim_view_t *v, double az, double el);
/* P drawn: OUT = (p.e1, -p.e2). */
void anim_project(const anim_view_t *v, const double p[3], double out[2]);
/* The rim of centre C, normal N (not zero) and radius R >= 0, drawn: an
 * ellipse OUT = {cx, cy, rx, ry, angle}: centre, semi-axes, and the angle
 * in degrees (SVG's rotate, clockwise on the screen) from the screen's x
 * axis to the rx axis.  rx = R along the projection of N x d, the
 * diameter that lies in the screen's plane; ry = R |N.d|/|N|, at least
 * R/1e6 (an ellipse with a zero semi-axis is not drawn at all in SVG; a
 * rim seen edge-on is a segment). */
void anim_ellipse(const anim_view_t *v, const double c[3], const double n[3],
                  double r, double out[5]);

/* Writes SC in FORMAT to OUT.  ID names the page's root element (HTML:
 * its id, a prefix of nothing else; several animations in one notebook
 * must have different ones); NULL: "nh-animation".  The caller checks OUT
 * for write errors. */
void anim_write(const anim_scene_t *sc, anim_format_t format, const char *id,
                FILE *out);

#endif
