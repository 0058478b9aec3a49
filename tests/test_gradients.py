"""Reverse-mode gradients through the whole run agree with central finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import swe

GRID = swe.Grid(nx=24, ny=20, x=(0.0, 1200.0), y=(0.0, 1000.0))
X, Y = (np.asarray(a) for a in GRID.cell_centers())
BUMP = np.exp(-((X - 700.0) ** 2 + (Y - 500.0) ** 2) / 150.0**2)


def _loss(n, amplitude, *, controller, integrator="ssprk2"):
    """Gauge misfit-like scalar: squared surface at a few cells after a wave crosses a bump."""
    bed = -5.0 + amplitude * BUMP
    model = swe.ShallowWater(GRID, bed=bed, friction=swe.Manning(n),
                             boundaries=swe.Boundaries(east=swe.Outflow()))
    eta0 = 0.5 * jnp.exp(-((X - 300.0) ** 2 + (Y - 450.0) ** 2) / 120.0**2)
    s0 = swe.State.from_surface(model, eta=eta0)
    kwargs = dict(dt=2.0) if controller == "fixed" else dict(cfl=0.4)
    r = swe.simulate(model, s0, t_end=60.0, save_at=[30.0, 60.0], checkpoints=8,
                     envelopes=False, integrator=integrator, **kwargs)
    eta = r.states.h + bed[None]
    return jnp.sum(eta[:, 10, 14:20] ** 2) + jnp.sum(r.final.hu[8:12, 12]) ** 2


@pytest.mark.parametrize("controller,integrator", [("cfl", "ssprk2"), ("cfl", "split"),
                                                          ("cfl", "strang")])
def test_gradient_matches_central_differences(controller, integrator):
    # fixed steps: the two tests below
    n0, a0 = 0.03, 2.0
    loss = jax.jit(lambda n, a: _loss(n, a, controller=controller, integrator=integrator))
    gn, ga = jax.grad(loss, argnums=(0, 1))(n0, a0)
    for g, f, x0 in ((gn, lambda e: loss(n0 + e, a0), n0), (ga, lambda e: loss(n0, a0 + e), a0)):
        eps = 1e-5 * x0
        fd = (f(eps) - f(-eps)) / (2 * eps)
        assert abs(float(fd)) > 1e-8  # the parameter matters
        assert abs(float(g) - float(fd)) <= 1e-5 * abs(float(fd)), (float(g), float(fd))


def test_gradient_with_respect_to_bed_field_and_initial_state():
    """Fields are differentiable too: d loss / d bed at every cell, and d loss / d eta0.

    First order here: a limiter's kinks (minmod of two zero slopes in water at rest) make
    the MUSCL loss non-differentiable along some field directions, and central differences
    then fail to converge, whatever the gradient.
    """

    def loss(bed, eta0):
        model = swe.ShallowWater(GRID, bed=bed, friction=swe.Manning(0.03),
                                 scheme=swe.FiniteVolume(reconstruction="first_order"))
        s0 = swe.State.from_surface(model, eta=eta0)
        r = swe.simulate(model, s0, t_end=20.0, dt=2.0, envelopes=False)
        return jnp.sum(r.final.h[10, 5:15] ** 2)

    bed = -5.0 + 2.0 * BUMP
    eta0 = 0.3 * np.exp(-((X - 300.0) ** 2 + (Y - 450.0) ** 2) / 120.0**2)
    g_bed, g_eta = jax.grad(loss, argnums=(0, 1))(jnp.asarray(bed), jnp.asarray(eta0))
    assert g_bed.shape == (20, 24) and g_eta.shape == (20, 24)
    # A smooth direction: a random one would flip limiter branches inside the FD stencil.
    direction = np.exp(-((X - 500.0) ** 2 + (Y - 600.0) ** 2) / 200.0**2) * np.cos(X / 150.0)
    eps = 1e-6
    fd = (loss(bed + eps * direction, eta0) - loss(bed - eps * direction, eta0)) / (2 * eps)
    np.testing.assert_allclose(float(jnp.sum(g_bed * direction)), float(fd), rtol=1e-5)
    fd = (loss(bed, eta0 + eps * direction) - loss(bed, eta0 - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(float(jnp.sum(g_eta * direction)), float(fd), rtol=1e-5)


def test_gradient_memory_does_not_grow_with_the_number_of_steps():
    """Recursive checkpointing: the compiled gradient's scratch memory is the same for 25
    steps and for 400 (what grows is recomputation, not storage)."""
    grid = swe.Grid(nx=16, ny=12, x=(0.0, 16.0), y=(0.0, 12.0))

    def loss(n, t_end):
        model = swe.ShallowWater(grid, bed=-1.0, friction=swe.Manning(n),
                                 scheme=swe.FiniteVolume(reconstruction="first_order"))
        s0 = swe.State(h=np.full((12, 16), 1.0) + 0.1 * (np.arange(16) < 8), hu=0.0, hv=0.0)
        r = swe.simulate(model, s0, t_end=t_end, dt=0.1, checkpoints=16, envelopes=False)
        return jnp.sum(r.final.h ** 2)

    sizes = []
    for t_end in (2.5, 40.0):
        compiled = jax.jit(jax.grad(lambda n: loss(n, t_end))).lower(0.03).compile()
        sizes.append(compiled.memory_analysis().temp_size_in_bytes)
    state_bytes = 3 * 12 * 16 * 8
    assert sizes[1] <= sizes[0] + 4 * state_bytes, sizes
