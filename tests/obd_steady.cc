// obd_steady.cc — the outside reference for the benchmark bicycle's
// hands-free steady turns (tests/lang/steady_bicycle_obd.nh,
// tests/test_steady.c): the turns of Basu-Mandal, Chatterjee & Papadopoulos
// (Proc. R. Soc. A 463, 2007) as D. L. Peterson's Open Bicycle Dynamics
// computes them (github.com/hazelnusse/OBD, commit
// b9e7a27fac335efb11dcec9884e3b4b0fd4cee3b).  Not built by `make`: CI has
// no network, so the numbers it prints are pinned in those tests.  This
// file is ours; it only calls OBD's library, built unmodified (GPLv3, not
// part of nh):
//
//   git clone https://github.com/hazelnusse/OBD && cd OBD && git checkout b9e7a27
//   printf '#!/bin/sh\nexec g++ -fpermissive -w "$@"\n' > /tmp/gxx && chmod +x /tmp/gxx
//   mkdir build && cd build
//   CXX=/tmp/gxx cmake .. -Dobd_build_gui=OFF -Dobd_build_tests=OFF
//       -DCMAKE_BUILD_TYPE=Release -DCMAKE_POLICY_VERSION_MINIMUM=3.5
//   make whipple
//   g++ -O2 -std=c++17 -fpermissive -w -I../whipple/include -Iinclude
//       NH/tests/obd_steady.cc whipple/src/libwhipple.a -lgsl -lgslcblas
//       -o obd_steady
//   ./obd_steady
//
// (one command a line; an indented line continues the one above it)
//
// (-fpermissive: OBD's whipplesteadycalcs.cpp takes the address of GSL
// views, an error in today's g++; nothing here uses that file.)
//
// What OBD gives.  Its model is its own: Peterson's Autolev derivation of
// the Whipple bicycle in his coordinates (q1 lean, q2 pitch, q3 steer; the
// rear frame with the rider and the fork as gyrostats), with Meijaard et
// al.'s benchmark parameters (Whipple::setBenchmarkParameters, whipple.cpp
// line 363).  Whipple::steadyEqns (whipple/src/whipple_al_steady.cpp) gives,
// at a lean and steer (the pitch from the front contact, Whipple::calcPitch,
// whipple.cpp line 441), the squared front wheel rate of the steady turn
// there, u5s_s (line 146), and the steer torque it needs, Ts_s (line 177):
// a hands-free turn is a root of Ts_s with u5s_s > 0.  Its rates are those
// of OBD's equations of motion, Whipple::eoms (whipple_al.cpp line 36), with
// the lean and steer rates 0: yaw rate u0 = nh's psi', rear wheel rate u4 =
// thR', front wheel rate u5 = thF' (each wheel relative to its frame;
// forward motion has u4 < 0, as thR' < 0 in nh).  OBD's steer is nh's delta
// modulo 2 pi.
//
// The eigenvalues are those of the Jacobian of eoms() in (lean, steer,
// their rates, u5), by five-point central differences (good to about
// 1e-9).  OBD's own A matrix (Whipple::computeOutputs, whipple_al.cpp line
// 641) is not used: in a turn it differs from the derivative of its eoms()
// by 5e-5 relative (A[71] = 9.477816 against 9.477362 at lean 0.1; exact at
// upright straight running), and Whipple::calcEvals drops the u5 row and
// column (the wheel's rate held).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>

#include "whipple.h"

static Whipple *B;

// The steer torque of the steady turn at (LEAN, STEER); NAN where the
// pitch has no solution.  The pitch's Newton iteration starts from the
// upright one each time, so nothing depends on the order of the calls.
static double Ts(double lean, double steer)
{
    B->q1 = lean;
    B->q3 = steer;
    B->q2 = M_PI / 10;
    B->calcPitch();
    if (!std::isfinite(B->q2) || fabs(B->q2 - M_PI / 10) > 0.2)
        return NAN;
    B->steadyEqns();
    return B->Ts_s;
}

// The root of Ts(LEAN, .) in [a, b], where it changes sign (Illinois).
static double root_steer(double lean, double a, double b)
{
    double fa = Ts(lean, a), fb = Ts(lean, b);
    for (int k = 0; k < 300 && fabs(b - a) > 2e-16 * fabs(b); k++) {
        double c = (a * fb - b * fa) / (fb - fa);
        if (!(c > fmin(a, b) && c < fmax(a, b)))
            c = 0.5 * (a + b);
        double fc = Ts(lean, c);
        if (fc == 0)
            return c;
        if ((fc < 0) == (fb < 0))
            fa *= 0.5;
        else {
            a = b;
            fa = fb;
        }
        b = c;
        fb = fc;
    }
    return b;
}

// Every hands-free turn at LEAN with the steer in (lo, hi): the sign
// changes of Ts on N intervals that are roots (not poles, where u5s_s
// passes through infinity) with u5s_s > 0.
static std::vector<double> turns(double lean, double lo, double hi, int n)
{
    std::vector<double> r;
    double pd = lo, pt = Ts(lean, lo);
    for (int i = 1; i <= n; i++) {
        double d = lo + (hi - lo) * i / n, t = Ts(lean, d);
        if (std::isfinite(t) && std::isfinite(pt) && (t < 0) != (pt < 0)) {
            double s = root_steer(lean, pd, d);
            if (fabs(Ts(lean, s)) < 1e-9 && B->u5s_s > 0)
                r.push_back(s);
        }
        pd = d;
        pt = t;
    }
    return r;
}

// The state of the turn at (LEAN, STEER), moving forward (u4 < 0).
static void set_turn(double lean, double steer)
{
    Ts(lean, steer);
    double u5 = sqrt(B->u5s_s);
    for (int s = 0; s < 2; s++) {
        double x[10] = {0, lean, steer, 0, 0, 0, 0, 0, 0, s ? -u5 : u5};
        double f[10];
        B->q2 = M_PI / 10;
        eomwrapper(0, x, f, B);
        if (B->u4 < 0)
            return;
    }
}

// The eigenvalues of the Jacobian of eoms() in (q1, q3, u1, u3, u5) at the
// current state (OBD's state vector: q0 q1 q3 q4 q5 q6 q7 u1 u3 u5), by
// five-point central differences, by decreasing real part.
static void eig(double re[5], double im[5])
{
    double x0[10] = {B->q0, B->q1, B->q3, B->q4, B->q5, B->q6, B->q7,
                     B->u1, B->u3, B->u5};
    const int idx[5] = {1, 2, 7, 8, 9};
    const double off[4] = {2, 1, -1, -2}, h = 1e-4;
    gsl_matrix *m = gsl_matrix_alloc(5, 5);
    for (int j = 0; j < 5; j++) {
        double f[4][10], x[10];
        for (int s = 0; s < 4; s++) {
            memcpy(x, x0, sizeof x);
            x[idx[j]] += off[s] * h;
            B->q2 = M_PI / 10;
            eomwrapper(0, x, f[s], B);
        }
        for (int i = 0; i < 5; i++)
            gsl_matrix_set(m, i, j,
                           (-f[0][idx[i]] + 8 * f[1][idx[i]] -
                            8 * f[2][idx[i]] + f[3][idx[i]]) / (12 * h));
    }
    double f[10];
    B->q2 = M_PI / 10;
    eomwrapper(0, x0, f, B); // the state back
    gsl_vector_complex *ev = gsl_vector_complex_alloc(5);
    gsl_eigen_nonsymm_workspace *w = gsl_eigen_nonsymm_alloc(5);
    gsl_eigen_nonsymm(m, ev, w);
    std::vector<std::pair<double, double>> e;
    for (int i = 0; i < 5; i++)
        e.push_back({GSL_REAL(gsl_vector_complex_get(ev, i)),
                     GSL_IMAG(gsl_vector_complex_get(ev, i))});
    std::sort(e.begin(), e.end(), [](auto a, auto b) {
        return a.first != b.first ? a.first > b.first : a.second > b.second;
    });
    for (int i = 0; i < 5; i++) {
        re[i] = e[i].first;
        im[i] = e[i].second;
    }
    gsl_eigen_nonsymm_free(w);
    gsl_vector_complex_free(ev);
    gsl_matrix_free(m);
}

static void print_turn(const char *what, double lean, double steer)
{
    set_turn(lean, steer);
    double re[5], im[5];
    eig(re, im);
    double d = steer < 0 ? steer + 2 * M_PI : steer;
    printf("%s phi %.17g delta %.17g thR' %.17g psi' %.17g thF' %.17g "
           "v %.17g\n",
           what, lean, d, B->u4, B->u0, B->u5, -B->u4 * B->rr);
    printf("    eig");
    for (int i = 0; i < 5; i++)
        printf(" %.13g%+.13gi", re[i], im[i]);
    printf("\n");
}

// A fold of a family in the lean: on one side of it Ts(lean, .) has two
// roots near the fold's steer, on the other none.  So the fold is the lean
// where the extreme of Ts(lean, .) over the steer in [s0, s1] (the maximum
// for SIGN +1) is 0: golden section for the extreme, bisection in the
// lean.  The lean comes out to rounding, the steer (the extreme's place)
// to about 1e-8.
static double ts_extreme(double lean, double s0, double s1, int sign,
                         double *at)
{
    const double g = (sqrt(5.0) - 1) / 2;
    double a = s0, b = s1, c = b - g * (b - a), d = a + g * (b - a);
    double fc = sign * Ts(lean, c), fd = sign * Ts(lean, d);
    while (fabs(b - a) > 1e-13) {
        if (fc > fd) {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = sign * Ts(lean, c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = sign * Ts(lean, d);
        }
    }
    *at = 0.5 * (a + b);
    return sign * Ts(lean, *at);
}

static void fold(const char *what, double la, double lb, double s0,
                 double s1, int sign)
{
    double at, fa = ts_extreme(la, s0, s1, sign, &at);
    for (int k = 0; k < 200 && fabs(lb - la) > 1e-16; k++) {
        double c = 0.5 * (la + lb), fc = ts_extreme(c, s0, s1, sign, &at);
        if ((fc < 0) == (fa < 0)) {
            la = c;
            fa = fc;
        } else
            lb = c;
    }
    double l = 0.5 * (la + lb);
    ts_extreme(l, s0, s1, sign, &at);
    print_turn(what, l, at);
}

// The handlebar-reversed family's last branch (after its second fold): at
// leans from 0.624 to 0.754 the family passes three times, this branch
// with the largest steer in nh's (pi, 3.55).
static double last_branch(double lean)
{
    std::vector<double> r =
        turns(lean, -M_PI + 1e-12, 3.55 - 2 * M_PI, 4000);
    return r.empty() ? NAN : r.back();
}

// On the last branch at LEAN: the real eigenvalue nearest 0 other than the
// family's own zero (the smallest in modulus) ...
static double real_crossing(double lean)
{
    double re[5], im[5];
    set_turn(lean, last_branch(lean));
    eig(re, im);
    int k0 = 0;
    for (int i = 1; i < 5; i++)
        if (hypot(re[i], im[i]) < hypot(re[k0], im[k0]))
            k0 = i;
    double nearest = INFINITY;
    for (int i = 0; i < 5; i++)
        if (i != k0 && im[i] == 0 && fabs(re[i]) < fabs(nearest))
            nearest = re[i];
    return nearest;
}

// ... the real part of the complex pair ...
static double pair_real(double lean)
{
    double re[5], im[5];
    set_turn(lean, last_branch(lean));
    eig(re, im);
    for (int i = 0; i < 5; i++)
        if (im[i] != 0)
            return re[i];
    return NAN;
}

// ... and the energy (OBD's ke + pe, whipple_al.cpp lines 1011, 1045).
static double energy(double lean)
{
    set_turn(lean, last_branch(lean));
    B->computeOutputs();
    return B->ke + B->pe;
}

// Where FN changes sign in [a, b]: bisection.
static double crossing(double (*fn)(double), double a, double b)
{
    double fa = fn(a);
    for (int k = 0; k < 60; k++) {
        double c = 0.5 * (a + b), fc = fn(c);
        if ((fc < 0) == (fa < 0)) {
            a = c;
            fa = fc;
        } else
            b = c;
    }
    return 0.5 * (a + b);
}

// Straight running with the handlebar reversed (steer pi) at the front
// wheel rate U5: the determinant of OBD's 4x4 linearization (lean, steer,
// their rates; Whipple::calcEvals, whipple.cpp line 455, exact at upright
// straight running, where u5 decouples).  Its zero is the capsize speed.
static double det_upright(double u5)
{
    B->q1 = 0;
    B->q3 = M_PI;
    B->q2 = M_PI / 10;
    B->calcPitch();
    B->u1 = B->u3 = 0;
    B->u5 = u5;
    B->calcEvals();
    double re = 1, im = 0;
    for (int i = 0; i < 4; i++) {
        double a = GSL_REAL(gsl_vector_complex_get(B->evals, i));
        double b = GSL_IMAG(gsl_vector_complex_get(B->evals, i));
        double r = re * a - im * b;
        im = re * b + im * a;
        re = r;
    }
    return re;
}

int main()
{
    gsl_set_error_handler_off();
    B = new Whipple();
    B->evalConstants();
    printf("# OBD b9e7a27: hands-free steady turns of the benchmark bicycle\n");

    printf("# handlebar forward: every turn with steer in (0, pi/2)\n");
    for (double l : {0.01, 0.1, 0.2, 0.3, 0.4}) {
        std::vector<double> r = turns(l, 1e-9, M_PI / 2, 20000);
        for (size_t i = 0; i < r.size(); i++)
            print_turn(i == 0   ? "forward-low "
                       : i == 1 ? "forward-high"
                                : "other-family",
                       l, r[i]);
    }
    fold("forward-fold", 0.41, 0.43, 0.17, 0.27, -1);

    printf("# handlebar reversed: every turn with steer in (pi, 3.55)\n");
    for (double l : {0.01, 0.1, 0.3, 0.5, 0.7, 0.8, 1.0, 1.2, 1.4, 1.5}) {
        std::vector<double> r =
            turns(l, -M_PI + 1e-12, 3.55 - 2 * M_PI, 20000);
        for (double s : r)
            print_turn("reversed    ", l, s);
    }
    fold("reversed-fold-max", 0.74, 0.76, 3.28 - 2 * M_PI, 3.34 - 2 * M_PI,
         -1);
    fold("reversed-fold-min", 0.624, 0.6245, 3.490 - 2 * M_PI,
         3.4975 - 2 * M_PI, +1);

    // The stability change on the last branch: where a real eigenvalue
    // crosses 0 (bisection on the eigenvalues, which differences give to
    // about 1e-7 there: the zero is double), and the least energy along
    // the family, the same point: E is an integral of the reduced motion
    // x' = F(x), so grad E . F = 0 and, at a steady motion, grad E is a
    // left null vector of the Jacobian; the family's tangent is a right
    // one, and the zero eigenvalue is double where they are orthogonal,
    // dE/ds = 0.
    double ls = crossing(real_crossing, 0.6257, 0.6262);
    print_turn("stability-change(eigenvalue)", ls, last_branch(ls));
    {
        const double g = (sqrt(5.0) - 1) / 2;
        double a = 0.6255, b = 0.6262, c = b - g * (b - a),
               d = a + g * (b - a);
        double fc = energy(c), fd = energy(d);
        while (fabs(b - a) > 1e-12) {
            if (fc < fd) {
                b = d;
                d = c;
                fd = fc;
                c = b - g * (b - a);
                fc = energy(c);
            } else {
                a = c;
                c = d;
                fc = fd;
                d = a + g * (b - a);
                fd = energy(d);
            }
        }
        double l = 0.5 * (a + b);
        printf("energy minimum E %.17g\n", energy(l));
        print_turn("stability-change(energy)", l, last_branch(l));
        print_turn("stability-change-1e-4", l - 1e-4, last_branch(l - 1e-4));
        print_turn("stability-change+1e-4", l + 1e-4, last_branch(l + 1e-4));
    }
    // The Hopf point: the complex pair's real part 0.
    double lh = crossing(pair_real, 0.80, 0.83);
    print_turn("hopf", lh, last_branch(lh));
    print_turn("hopf-1e-3", lh - 1e-3, last_branch(lh - 1e-3));
    print_turn("hopf+1e-3", lh + 1e-3, last_branch(lh + 1e-3));

    // The reversed family leaves straight running at the reversed
    // bicycle's capsize speed: OBD's linearization there, and its turn at
    // lean 1e-6.
    double a = 20, b = 25, fa = det_upright(a);
    for (int k = 0; k < 200 && b - a > 1e-15 * b; k++) {
        double c = 0.5 * (a + b), fc = det_upright(c);
        if ((fc < 0) == (fa < 0)) {
            a = c;
            fa = fc;
        } else
            b = c;
    }
    printf("reversed-capsize front wheel rate %.17g v %.17g\n", a, a * B->rf);
    for (double s : turns(1e-6, -M_PI + 1e-12, -M_PI + 0.01, 2000))
        print_turn("reversed-small", 1e-6, s);
    delete B;
    return 0;
}
