#!/usr/bin/env python3
"""The benchmark bicycle's linear model from Meijaard, Papadopoulos, Ruina
and Schwab, Proc. R. Soc. A 463 (2007), Appendix A, eqs. (A1)-(A24), with
the parameters of their Table 1, in 40-digit arithmetic (mpmath) — an
independent reference for examples/bicycle_control.nh (tests/
control_bicycle.sh): nh derives its B and G(s) from four rigid bodies
rolling on knife-edge wheels, nothing linearized by hand.

The model is M q'' + v C1 q' + (g K0 + v^2 K2) q = f, q = (phi, delta),
f = (T_phi, T_delta) (their eq. 2).  In first-order form x = (q, q'):
A = [0, I; -M^-1 (g K0 + v^2 K2), -v M^-1 C1], B = [0; M^-1].

    meijaard2007.py B V              B's lower half, M^-1 (4 numbers)
    meijaard2007.py G V OUT IN RE IM G(s) = e_OUT^T (sI - A)^-1 B e_IN at
                                     s = RE + IM i (OUT 1: phi, 2: delta;
                                     IN 1: T_phi, 2: T_delta); re, im
"""
import sys

import mpmath as mp

mp.mp.dps = 40


def appendix_a():
    w, c, lam = mp.mpf("1.02"), mp.mpf("0.08"), mp.pi / 10
    rR, mR, IRxx, IRyy = mp.mpf("0.3"), 2, mp.mpf("0.0603"), mp.mpf("0.12")
    xB, zB, mB = mp.mpf("0.3"), mp.mpf("-0.9"), 85
    IBxx, IBzz, IBxz = mp.mpf("9.2"), mp.mpf("2.8"), mp.mpf("2.4")
    xH, zH, mH = mp.mpf("0.9"), mp.mpf("-0.7"), 4
    IHxx, IHzz, IHxz = mp.mpf("0.05892"), mp.mpf("0.00708"), mp.mpf("-0.00756")
    rF, mF, IFxx, IFyy = mp.mpf("0.35"), 3, mp.mpf("0.1405"), mp.mpf("0.28")
    sl, cl = mp.sin(lam), mp.cos(lam)
    # (A1)-(A7): the whole bicycle
    mT = mR + mB + mH + mF
    xT = (xB * mB + xH * mH + w * mF) / mT
    zT = (-rR * mR + zB * mB + zH * mH - rF * mF) / mT
    ITxx = (IRxx + IBxx + IHxx + IFxx + mR * rR**2 + mB * zB**2 +
            mH * zH**2 + mF * rF**2)
    ITxz = IBxz + IHxz - mB * xB * zB - mH * xH * zH + mF * w * rF
    IRzz, IFzz = IRxx, IFxx
    ITzz = IRzz + IBzz + IHzz + IFzz + mB * xB**2 + mH * xH**2 + mF * w**2
    # (A8)-(A14): the front assembly
    mA = mH + mF
    xA, zA = (xH * mH + w * mF) / mA, (zH * mH - rF * mF) / mA
    IAxx = IHxx + IFxx + mH * (zH - zA)**2 + mF * (rF + zA)**2
    IAxz = IHxz - mH * (xH - xA) * (zH - zA) + mF * (w - xA) * (rF + zA)
    IAzz = IHzz + IFzz + mH * (xH - xA)**2 + mF * (w - xA)**2
    uA = (xA - w - c) * cl - zA * sl
    IAll = mA * uA**2 + IAxx * sl**2 + 2 * IAxz * sl * cl + IAzz * cl**2
    IAlx = -mA * uA * zA + IAxx * sl + IAxz * cl
    IAlz = mA * uA * xA + IAxz * sl + IAzz * cl
    # (A15)-(A17)
    mu = c / w * cl
    SR, SF = IRyy / rR, IFyy / rF
    ST = SR + SF
    SA = mA * uA + mu * mT * xT
    # (A18)-(A24)
    M = mp.matrix([[ITxx, IAlx + mu * ITxz],
                   [IAlx + mu * ITxz, IAll + 2 * mu * IAlz + mu**2 * ITzz]])
    K0 = mp.matrix([[mT * zT, -SA], [-SA, -SA * sl]])
    K2 = mp.matrix([[0, (ST - mT * zT) / w * cl], [0, (SA + SF * sl) / w * cl]])
    C1 = mp.matrix([[0, mu * ST + SF * cl + ITxz / w * cl - mu * mT * zT],
                    [-(mu * ST + SF * cl), IAlz / w * cl + mu * (SA + ITzz / w * cl)]])
    return M, C1, K0, K2


def state_space(v):
    M, C1, K0, K2 = appendix_a()
    g = mp.mpf("9.81")
    Mi = M**-1
    K = Mi * (g * K0 + v**2 * K2)
    C = Mi * (v * C1)
    A = mp.zeros(4, 4)
    A[0, 2] = A[1, 3] = 1
    for i in range(2):
        for j in range(2):
            A[2 + i, j] = -K[i, j]
            A[2 + i, 2 + j] = -C[i, j]
    B = mp.zeros(4, 2)
    for i in range(2):
        for j in range(2):
            B[2 + i, j] = Mi[i, j]
    return A, B


def main(argv):
    if len(argv) == 3 and argv[1] == "B":
        _, B = state_space(mp.mpf(argv[2]))
        print(" ".join(mp.nstr(B[2 + i, j], 20) for i in range(2) for j in range(2)))
    elif len(argv) == 7 and argv[1] == "G":
        v = mp.mpf(argv[2])
        out, inp = int(argv[3]) - 1, int(argv[4]) - 1
        s = mp.mpc(mp.mpf(argv[5]), mp.mpf(argv[6]))
        A, B = state_space(v)
        x = mp.lu_solve(s * mp.eye(4) - A, B[:, inp])
        g = x[out]
        print(mp.nstr(g.real, 20), mp.nstr(g.imag, 20))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
