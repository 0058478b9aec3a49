"""Prior distributions over scalar parameters, each with a map to an unconstrained space.

NUTS moves on the real line; a parameter with a bounded support (a friction coefficient
``n > 0``, a position inside a basin) is sampled as ``z`` in R and mapped to its support
by a smooth bijection ``x = T(z)``: identity, ``exp`` or a scaled logistic. The density in
``z`` is ``p(T(z)) |T'(z)|``; :meth:`AbstractPrior.log_density_unconstrained` includes that
Jacobian term. Users only ever see constrained values.
"""

from __future__ import annotations

import abc
import math
import numbers

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _check_real(name: str, value, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} is invalid; expected a finite number")
    if positive and value <= 0:
        raise ValueError(f"{name}={value!r} is invalid; expected a number > 0")
    return float(value)


def _normal_logpdf(x, loc, scale):
    r = (x - loc) / scale
    return -0.5 * r * r - math.log(scale) - _LOG_SQRT_2PI


class AbstractPrior(eqx.Module):
    """A distribution over one real parameter, sampled in an unconstrained space."""

    @abc.abstractmethod
    def log_density(self, x):
        """Log density at the constrained value ``x`` (-inf outside the support)."""

    @abc.abstractmethod
    def to_constrained(self, z):
        """The bijection ``T``: unconstrained ``z`` to the parameter's support."""

    @abc.abstractmethod
    def to_unconstrained(self, x):
        """``T^-1``."""

    @abc.abstractmethod
    def log_jacobian(self, z):
        """``log |T'(z)|``."""

    @abc.abstractmethod
    def sample(self, key, shape=()):
        """Draws of the constrained parameter."""

    @abc.abstractmethod
    def in_support(self, x) -> bool:
        """Whether a concrete value lies strictly inside the support."""

    def log_density_unconstrained(self, z):
        """Log density of ``z`` including the Jacobian term."""
        return self.log_density(self.to_constrained(z)) + self.log_jacobian(z)

    @property
    def unconstrained_scale(self) -> float:
        """The prior's spread in the unconstrained space (its standard deviation there, or
        about it): the unit of the MAP fit's trust region."""
        return self._unconstrained_scale()

    def _unconstrained_scale(self) -> float:
        return 1.0

    @property
    def median(self) -> float:
        return float(self.to_constrained(jnp.asarray(self._unconstrained_median())))

    def _unconstrained_median(self) -> float:
        return 0.0


class Normal(AbstractPrior):
    """Normal(``loc``, ``scale``) on the real line."""

    loc: float = eqx.field(static=True)
    scale: float = eqx.field(static=True)

    def __init__(self, loc, scale):
        self.loc = _check_real("loc", loc)
        self.scale = _check_real("scale", scale, positive=True)

    def log_density(self, x):
        return _normal_logpdf(x, self.loc, self.scale)

    def to_constrained(self, z):
        return z

    def to_unconstrained(self, x):
        return x

    def log_jacobian(self, z):
        return jnp.zeros_like(z)

    def sample(self, key, shape=()):
        return self.loc + self.scale * jax.random.normal(key, shape)

    def in_support(self, x) -> bool:
        return bool(np.isfinite(x))

    def _unconstrained_median(self):
        return self.loc

    def _unconstrained_scale(self):
        return self.scale


class AbstractPositivePrior(AbstractPrior):
    """A prior on ``x > 0``, sampled as ``z = log x``."""

    def to_constrained(self, z):
        return jnp.exp(z)

    def to_unconstrained(self, x):
        return jnp.log(x)

    def log_jacobian(self, z):
        return z

    def in_support(self, x) -> bool:
        return bool(np.isfinite(x) and x > 0)


class LogNormal(AbstractPositivePrior):
    """``log x ~ Normal(loc, scale)``: ``loc`` and ``scale`` are those of the log (the median
    is ``exp(loc)``). Sampled as ``z = log x``."""

    loc: float = eqx.field(static=True)
    scale: float = eqx.field(static=True)

    def __init__(self, loc, scale):
        self.loc = _check_real("loc", loc)
        self.scale = _check_real("scale", scale, positive=True)

    def log_density(self, x):
        safe = jnp.where(x > 0, x, 1.0)
        lx = jnp.log(safe)
        return jnp.where(x > 0, _normal_logpdf(lx, self.loc, self.scale) - lx, -jnp.inf)

    def log_density_unconstrained(self, z):
        # Written in z directly: exact for any finite z, however far into the tails.
        return _normal_logpdf(z, self.loc, self.scale)

    def sample(self, key, shape=()):
        return jnp.exp(self.loc + self.scale * jax.random.normal(key, shape))

    def _unconstrained_median(self):
        return self.loc

    def _unconstrained_scale(self):
        return self.scale


class HalfNormal(AbstractPositivePrior):
    """The half-normal of ``scale`` on ``x > 0`` (``|X|``, ``X ~ Normal(0, scale)``).
    Sampled as ``z = log x``."""

    scale: float = eqx.field(static=True)

    def __init__(self, scale):
        self.scale = _check_real("scale", scale, positive=True)

    def log_density(self, x):
        return jnp.where(x > 0, _normal_logpdf(x, 0.0, self.scale) + math.log(2.0), -jnp.inf)

    def log_density_unconstrained(self, z):
        return _normal_logpdf(jnp.exp(z), 0.0, self.scale) + math.log(2.0) + z

    def sample(self, key, shape=()):
        return self.scale * jnp.abs(jax.random.normal(key, shape))

    def _unconstrained_median(self):
        return math.log(0.6744897501960817 * self.scale)


class Uniform(AbstractPrior):
    """Uniform on ``(low, high)``. Sampled as ``z = logit((x - low) / (high - low))``."""

    low: float = eqx.field(static=True)
    high: float = eqx.field(static=True)

    def __init__(self, low, high):
        self.low = _check_real("low", low)
        self.high = _check_real("high", high)
        if not self.high > self.low:
            raise ValueError(f"high={high!r} is invalid; expected a number > low={low!r}")

    def log_density(self, x):
        inside = (x > self.low) & (x < self.high)
        return jnp.where(inside, -math.log(self.high - self.low), -jnp.inf)

    def to_constrained(self, z):
        return self.low + (self.high - self.low) * jax.nn.sigmoid(z)

    def to_unconstrained(self, x):
        p = (x - self.low) / (self.high - self.low)
        return jnp.log(p) - jnp.log1p(-p)

    def log_jacobian(self, z):
        return math.log(self.high - self.low) + jax.nn.log_sigmoid(z) + jax.nn.log_sigmoid(-z)

    def log_density_unconstrained(self, z):
        # The uniform density cancels the interval's width: finite for every finite z.
        return jax.nn.log_sigmoid(z) + jax.nn.log_sigmoid(-z)

    def sample(self, key, shape=()):
        return jax.random.uniform(key, shape, minval=self.low, maxval=self.high)

    def in_support(self, x) -> bool:
        return bool(np.isfinite(x) and self.low < x < self.high)

    def _unconstrained_scale(self):
        return math.pi / math.sqrt(3.0)  # the standard logistic's sd


PRIORS = (Normal, LogNormal, Uniform, HalfNormal)


def check_priors(priors) -> dict[str, AbstractPrior]:
    """``priors`` as an ordered ``{name: prior}``, with a clear error for anything else."""
    if not isinstance(priors, dict) or not priors:
        raise ValueError(f"priors={priors!r} is invalid; expected a non-empty dict "
                         "{name: prior}, e.g. {'n': cal.LogNormal(-3.5, 0.5)}")
    for name, prior in priors.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"priors has the key {name!r}; expected parameter names that are "
                             "Python identifiers")
        if not isinstance(prior, AbstractPrior):
            raise ValueError(f"priors[{name!r}]={prior!r} is invalid; expected one of "
                             + ", ".join(f"cal.{p.__name__}" for p in PRIORS))
    return dict(priors)
