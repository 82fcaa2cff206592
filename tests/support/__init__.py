"""What the tests share and test nothing themselves. A test module imports from here, never from
another test module (tests/project/test_layers.py checks it).

- slow, obvious twins of the fast code: ``reference`` (the estimators), ``ppo_reference`` (the
  PPO loss), ``upstream`` and ``upstream_rewardflow`` (re-implementations of upstream methods);
- builders of inputs: ``rollout_lines`` (good and bad crbc.rollout/1 lines), ``groups`` (random
  chain groups), ``verl_batches`` (verl DataProto batches as verl-agent packs them),
  ``textarena_play`` (scripted textarena Sokoban episodes), ``runs`` (small crbc.run/1 folders),
  ``toy_estimator`` (an estimator only the tests register);
- readers of what the studio draws: ``heatmap_cells``, ``html_tables``;
- ``apptest`` (the studio in AppTest; conftest's ``app`` fixture), ``markers`` (the browser
  marker rule conftest enforces), ``paths`` (the repository's root, app.py, tests/data).
"""
