from host.cli import main

main(prog_name="python -m host")
