from driftrag.cli import main

main()
