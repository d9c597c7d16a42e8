# Sourced by the torch2/ tests: runs a test of tests/torch/ under the PyTorch
# 2.x environment (configure --with-torch-python; `make check` sets up
# build/torch2-venv) against libhcops_torch2.so. Without one, one line says
# why and the test skips (77).
if [ -z "${HCOPS_TORCH2_PYTHON:-}" ] || [ ! -f "${HCOPS_TORCH2_LIB:-}" ]; then
  echo "SKIP: no PyTorch 2.x build of libhcops_torch (configure --with-torch-python=PATH; make check sets one up in build/torch2-venv unless TORCH2=no or the package index cannot be reached)"
  exit 77
fi
PYTHON=$HCOPS_TORCH2_PYTHON
HCOPS_TORCH_LIB=$HCOPS_TORCH2_LIB
export PYTHON HCOPS_TORCH_LIB
echo "== $("$PYTHON" -c 'import torch; print("torch", torch.__version__)') ($PYTHON), $HCOPS_TORCH_LIB"
