# a module of a package in resources/ (`python -m pkg.bolt`): never run by the unit tests
