from . import Table
T = Table("scipy.signal")
