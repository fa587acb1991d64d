#!/usr/bin/env bash
# Dummy bolt script: only its existence matters to the loader tests.
