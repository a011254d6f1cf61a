// Eigenvalues of a real square matrix, in double precision: the matrix is reduced to upper
// Hessenberg form by Householder reflections (the same eigenvalues: a similarity), then
// Francis's implicit double-shift QR steps drive its subdiagonal to zero, deflating a 1 x 1
// block (a real eigenvalue) or a 2 x 2 block (a real pair or a complex-conjugate pair) at a
// time off its bottom (Golub and Van Loan, Matrix Computations, 4th ed., sections 7.4-7.5).
// About 10 n^3 operations; the circuits here give matrices of a few dozen to a few hundred rows.
#ifndef CHARGPT_EIGEN_H
#define CHARGPT_EIGEN_H

// Overwrites a (n x n, row-major) with its Hessenberg form and then work of the QR steps, and
// writes its n eigenvalues as re[k] + i im[k], in the order they deflate (a complex pair's
// two members next to each other, the one with im > 0 first). Returns 0, or -1 when the QR
// steps fail to converge (never seen on a finite matrix; a matrix with an infinity or NaN
// gives -1 at once).
int eigenvalues(double *a, int n, double *re, double *im);

#endif
