#!/usr/bin/env bash
# a bash bolt for the Flux fixtures (never run by the unit tests)
