"""The machinery that runs the experiments, apart from the science it runs.

Above the d_min engine and the setups (:mod:`sattn.experiments.engine`,
:mod:`sattn.experiments.setups`, whose identity it stamps on every stored result), below the
protocols that use it (:mod:`sattn.experiments.protocol`, :mod:`sattn.experiments.acceptance`,
:mod:`sattn.frontier`). Modules, in the order in which they may import each other:

* :mod:`~sattn.runs.store`: the resumable store of task results and manifests, the lock of an
  output folder, and the checks of output paths;
* :mod:`~sattn.runs.cluster`: running tasks on a Dask cluster (``--scheduler``);
* :mod:`~sattn.runs.bench`: the benchmark of ``python -m sattn bench``.

None of their names is flat but the store's two exceptions (:class:`sattn.StoreError`,
:class:`sattn.StoreWarning`), which a reader may catch.
"""

from .._lazy import submodule_getattr

#: ``sattn.runs.<module>`` after a plain ``import sattn``: imported on first use.
__getattr__ = submodule_getattr(__name__)
