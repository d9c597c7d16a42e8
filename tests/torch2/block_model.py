"""The model of the torch2 tests that train in a child process (python -c):
a transformer block in DiT's shape (LayerNorm, qkv, attention, proj, fc1,
tanh GeLU, fc2, residuals; hidden 96, 4 heads), as source text that
defines `Block` (with torch, nn and F imported). attention: "matmul" (q k^T,
softmax, @ v: the dispatcher's bmm and softmax) or "sdpa"
(scaled_dot_product_attention: the CPU flash kernel)."""

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


def block_source(attention):
    return _BLOCK.replace("ATTENTION", _ATTENTION[attention])
