# nbgrader's settings for the book's assignments (scripts/assignments.py copies this file
# into the course directory it writes, _build/assignments/ by default).
c = get_config()  # noqa: F821  (nbgrader provides it)

c.CourseDirectory.root = "."
# A chapter runs whole before its exercises: some cells train or compile for a while.
c.ExecutePreprocessor.timeout = 900
c.Execute.timeout = 900
# A failed test cell scores 0 and grading goes on with the next cell.
c.Execute.allow_errors = True
