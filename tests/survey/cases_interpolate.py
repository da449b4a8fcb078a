from . import Table
T = Table("scipy.interpolate")
