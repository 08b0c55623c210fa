"""A 2D Poisson solve with petsc4py: the 5-point Laplacian on an N x N grid
(DMDA, distributed over the ranks), conjugate gradients with a Jacobi
preconditioner for a fixed number of iterations. Each iteration is a halo
exchange and two Allreduces, as in most iterative solvers.

    golaunch -n 4 python3 bench/real/poisson.py [N] [ITERS]
"""
import sys

from petsc4py import PETSc

n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 1000

da = PETSc.DMDA().create([n, n], stencil_width=1, stencil_type=PETSc.DMDA.StencilType.STAR)
A = da.createMatrix()
(xs, xe), (ys, ye) = da.getRanges()
row, col = PETSc.Mat.Stencil(), PETSc.Mat.Stencil()
for j in range(ys, ye):
    for i in range(xs, xe):
        row.index = (i, j)
        A.setValueStencil(row, row, 4.0)
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= i + di < n and 0 <= j + dj < n:
                col.index = (i + di, j + dj)
                A.setValueStencil(row, col, -1.0)
A.assemble()

b = da.createGlobalVec()
b.set(1.0 / (n * n))
x = b.duplicate()
ksp = PETSc.KSP().create()
ksp.setOperators(A)
ksp.setType("cg")
ksp.getPC().setType("jacobi")
ksp.setTolerances(rtol=1e-50, atol=0.0, max_it=iters)
ksp.setConvergenceTest(lambda ksp, it, rnorm: 0 if it < iters else 1)
t0 = PETSc.Log.getTime()
ksp.solve(b, x)
t = PETSc.Log.getTime() - t0
if PETSc.COMM_WORLD.getRank() == 0:
    print(f"poisson n={n} ranks={PETSc.COMM_WORLD.getSize()} iterations={ksp.getIterationNumber()} solve_s={t:.3f}")
