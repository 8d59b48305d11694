import typing

# Doubles x.
def helper(x):
    return 2 * x


@dataclass
class Outer(Base):
    class Inner:
        def method(self):
            pass

    @typing.overload
    def get(self, key: int) -> int: ...
    def get(self, key):
        return key

if typing.TYPE_CHECKING:
    def checked(): ...
else:
    def checked():
        pass
