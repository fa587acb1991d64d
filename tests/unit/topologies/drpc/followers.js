// a placeholder: these topologies are loaded, never run
