"""`python -m kubesched.cli`: the same as the `kubesched` command."""

from kubesched.cli.app import main

main()
