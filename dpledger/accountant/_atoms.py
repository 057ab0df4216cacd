"""Former name of :mod:`dpledger.accountant.costs` (kept while modules move)."""

from dpledger.accountant.costs import fixed_guarantee as fixed_guarantee
from dpledger.accountant.costs import gaussian_mu as gaussian_mu
from dpledger.accountant.costs import gaussian_mu_squared as gaussian_mu_squared
from dpledger.accountant.costs import pure_epsilon as pure_epsilon
from dpledger.accountant.costs import sqrt_directed as sqrt_directed
