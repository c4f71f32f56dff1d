"""`python -m ragexp` and the `ragexp` console script."""

from ragexp.commands import main

if __name__ == "__main__":
    main()
