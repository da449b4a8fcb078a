from . import Table
T = Table("issue")
