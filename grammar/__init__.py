"""Package data: the Lark grammar of the strategy language (copy.lark).  May import nothing."""
