import numpy as np

import swe


def test_cell_centres_and_spacing():
    grid = swe.Grid(nx=4, ny=2, x=(0.0, 8.0), y=(10.0, 14.0))
    assert grid.shape == (2, 4) and grid.dx == 2.0 and grid.dy == 2.0
    X, Y = grid.cell_centers()
    assert X.shape == (2, 4) and Y.shape == (2, 4)
    np.testing.assert_array_equal(X[0], [1.0, 3.0, 5.0, 7.0])
    np.testing.assert_array_equal(Y[:, 0], [11.0, 13.0])
    assert grid.cell_index(7.9, 10.1) == (0, 3)


def test_one_dimensional_grid_has_square_cells_by_default():
    grid = swe.Grid(nx=100, x=(0.0, 1000.0))
    assert grid.shape == (1, 100) and grid.dy == grid.dx == 10.0
