# only in resources/: components running it get resources/ as their cwd
