"""Field comparators: how far a claimed title, author list, year, venue or page range agrees with a
registry record's, each as a score in [0, 1]. tasks/validate.py turns the scores into a status."""
