"""What the tests share and test nothing themselves: slow reference twins of the fast code
(reference, ppo_reference, upstream, upstream_rewardflow), readers of what the studio draws
(heatmap_cells, html_tables), builders of test inputs, the repository's paths, and the studio
opened in AppTest (apptest). A test module imports from here, never from another test module."""
