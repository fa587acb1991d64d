# only in resources/, as in a topology jar: never run by the unit tests
