from . import Table
T = Table("scipy.ndimage")
