#!/usr/bin/env bash
# a placeholder: these topologies are loaded, never run
