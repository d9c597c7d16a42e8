"""The training of the torch2 tests that train in a child process (python
-c), as source text (with json, sys, torch, nn and F imported, the seed
set): two transformer blocks in DiT's shape (LayerNorm, qkv, attention,
proj, fc1, tanh GeLU, fc2, residuals; hidden 96, 4 heads, 64 tokens, batch
4) trained 5 steps with AdamW (lr 1e-3) under bf16 autocast when `dtype` is
"bf16", leaving `model`, `net` (what ran the steps) and `losses`.
attention: "matmul" (q k^T, softmax, @ v: the dispatcher's bmm and softmax)
or "sdpa" (scaled_dot_product_attention: the CPU flash kernel)."""

_BLOCK = """
class Block(nn.Module):
    def __init__(self, d=96, heads=4):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = ATTENTION
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.n2(x)), approximate="tanh"))
"""
_ATTENTION = {
    "matmul": "(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5).softmax(-1) @ v",
    "sdpa": "F.scaled_dot_product_attention(q, k, v)",
}


_TRAIN = """
model = nn.Sequential(Block(), Block())
net = NET
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(4, 64, 96), torch.randn(4, 64, 96)
losses = []
for _ in range(5):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
        loss = F.mse_loss(net(x).float(), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
"""


def training_source(attention, net="model"):
    """net: the expression that runs the model (e.g. a torch.compile of it)."""
    return _BLOCK.replace("ATTENTION", _ATTENTION[attention]) + _TRAIN.replace("NET", net)
