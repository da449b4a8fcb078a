from . import Table
T = Table("scipy.linalg")
