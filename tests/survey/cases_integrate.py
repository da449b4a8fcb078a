from . import Table
T = Table("scipy.integrate")
