from . import Table
T = Table("scipy.stats")
