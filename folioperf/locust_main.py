"""`python -m folioperf.locust_main ARGS`: Locust's own command line, as `locust ARGS` runs it, in a process
that reads the installed packages' entry points once (folioperf.entry_points) before Locust imports and
patches with gevent. `folioperf run` and `folioperf worker` start their Locust processes with it."""

if __name__ == "__main__":  # only as a program: importing this module starts nothing
    from folioperf.entry_points import read_once

    read_once()

    from locust.main import main  # after read_once: importing Locust patches with gevent

    main()
