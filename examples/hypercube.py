"""A topology class of one's own (docs/collectives.md, "Topologies"): a hypercube."""

from simpy_astra.topologies import BasicTopology


class Hypercube(BasicTopology):
    """NPU i links to i XOR 2^k; a message fixes the differing bits lowest first."""

    def hops(self, src, dst):
        return bin(src ^ dst).count("1")

    def links(self):
        dims = self.npus_count.bit_length() - 1
        return [(i, i ^ (1 << k)) for i in range(self.npus_count) for k in range(dims)]

    def route(self, src, dst):
        path = [src]
        for k in range(self.npus_count.bit_length() - 1):
            if (path[-1] ^ dst) >> k & 1:
                path.append(path[-1] ^ (1 << k))
        return path
