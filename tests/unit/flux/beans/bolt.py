# a bolt script for the Flux fixtures (never run by the unit tests)
