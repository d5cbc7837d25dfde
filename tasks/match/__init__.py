"""Field comparators: how far a claimed title, author list, year, venue or page range agrees with a
registry record's, each as a score in [0, 1]. `decide.py` turns the scores into a status."""
