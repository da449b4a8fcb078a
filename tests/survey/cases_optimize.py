from . import Table
T = Table("scipy.optimize")
