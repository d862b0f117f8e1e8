"""Who lives in a generated town, and how each is told: backstories and what one knows of another.

`generate.py` decides who lives where, works where and knows whom (with its seeded random); this module only
puts that into words, in Japanese or English, with no chance of its own, so the same town reads the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from backend.transfer.lexicon import PlaceType


@dataclass
class Place:
    """A place of the generated town: public (with its type) or a home."""

    id: str
    kind: str
    language: str
    type: PlaceType | None = None  # None for a home
    name: str = ""
    description: str = ""
    dwelling: str = ""
    block: int = 0
    x: float = 0.0
    z: float = 0.0


@dataclass
class Person:
    """A generated townsperson: who, where it lives, what it does and whom it lives with."""

    id: str
    name: str
    given: str
    language: str
    female: bool
    age: int
    role: str  # "head", "spouse" or "child"
    household: int
    kin: list[tuple[Person, tuple[str, str]]] = field(default_factory=list)  # (member, (ja, en) label)
    title: tuple[str, str] = ("", "")  # (ja, en)
    work: Place | None = None  # a workplace, or a pupil's school
    student: bool = False
    retired: bool = False
    hobby: tuple[str, ...] = ()
    spot: Place | None = None  # where the hobby is done


def kin_label(a: Person, b: Person) -> tuple[str, str]:
    """What `a` calls `b`, a member of its household, as (ja, en): ("妻", "wife"), ("兄", "brother")."""
    if a.role != "child" and b.role != "child":
        return ("妻", "wife") if b.female else ("夫", "husband")
    if b.role == "child" and a.role != "child":
        return ("娘", "daughter") if b.female else ("息子", "son")
    if a.role == "child" and b.role != "child":
        return ("母", "mother") if b.female else ("父", "father")
    older = (b.age, a.id) > (a.age, b.id)  # twins: one of them is the elder all the same
    if b.female:
        return ("姉" if older else "妹", "sister")
    return ("兄" if older else "弟", "brother")


def story(person: Person, home: Place, where: tuple[str, str], goal: tuple[str, ...] | None) -> str:
    """A backstory in the person's language: age and work, home and family, pastime, what is on its mind."""
    if person.language == "ja":
        return _ja_story(person, home, where[0], goal)
    return _en_story(person, home, where[1], goal)


def _ja_story(person: Person, home: Place, where: str, goal: tuple[str, ...] | None) -> str:
    work = person.work.name if person.work else ""
    if person.student:
        text = f"{person.given}は{person.age}歳の{person.title[0]}。{work or '隣町の学校'}に通っている。"
    elif person.retired:
        text = f"{person.given}は{person.age}歳。仕事を退職して、のんびり暮らしている。"
    elif work:
        text = f"{person.given}は{person.age}歳。{work}で{person.title[0]}をしている。"
    else:
        text = f"{person.given}は{person.age}歳の{person.title[0]}で、家で仕事をしている。"
    if person.kin:
        family = "、".join(f"{label[0]}の{other.given}" for other, label in person.kin)
        text += f"{where}の{home.name}で、{family}と暮らしている。"
    else:
        text += f"{where}の{home.dwelling}で一人暮らし。"
    spot = f"で、よく{person.spot.name}に出かける。" if person.spot else "。"
    text += f"趣味は{person.hobby[0]}{spot}"
    return text + (f"{goal[0]}。" if goal else "")


def _en_story(person: Person, home: Place, where: str, goal: tuple[str, ...] | None) -> str:
    he, his = ("She", "her") if person.female else ("He", "his")
    head = f"{person.given}, {person.age},"
    if person.student:
        school = person.work.name if person.work else "a school in the next town"
        text = f"{head} is {_a(person.title[1])} at {school}."
    elif person.retired:
        text = f"{head} is retired."
    elif person.work and person.title[1] == "owner":
        text = f"{head} runs {person.work.name}."
    elif person.work:
        text = f"{head} works as {_a(person.title[1])} at {person.work.name}."
    else:
        text = f"{head} is {_a(person.title[1])} who works from home."
    if person.kin:
        family = _and([f"{label[1]} {other.given}" for other, label in person.kin])
        text += f" {he} lives at {home.name} in {where} with {his} {family}."
    else:
        text += f" {he} lives alone in {_a(home.dwelling)} in {where}."
    spot = f", often at {person.spot.name}." if person.spot else "."
    text += f" In {his} free time {he.lower()} enjoys {person.hobby[1]}{spot}"
    return text + (f" {he} {goal[1]}." if goal else "")


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def summary(a: Person, b: Person, why: str, where: tuple[str, str], *, pastime: bool) -> str:
    """What `a` knows of `b`, in `a`'s language: how they know each other (`why`: family, work, neighbour,
    town), what `b` does, and with `pastime` what `b` likes to talk about. `where` is `b`'s neighbourhood."""
    ja = a.language == "ja"
    what = _occupation(b, ja)
    if why == "family":
        label = next(label for other, label in a.kin if other is b)
        text = f"{label[0]}。{what}。" if ja else f"My {label[1]}, {what}."
    elif why == "work":
        text = _colleague(a, b, ja)
    elif why == "neighbour":
        text = f"{where[0]}に住むご近所さん。{what}。" if ja else f"A neighbour in {where[1]}, {what}."
    else:
        text = f"町でときどき顔を合わせる人。{what}。" if ja else f"Someone I see around town, {what}."
    if pastime:
        text += f"よく{b.hobby[0]}の話をする。" if ja else f" Often talks about {b.hobby[1]}."
    return text


def _occupation(person: Person, ja: bool) -> str:
    """What someone does, as a phrase: "喫茶こもれびの店員", "a baker at Oak Bakery", "retired"."""
    place = person.work.name if person.work else ""
    title = person.title[0 if ja else 1]
    if person.retired:
        return "退職して、のんびり暮らしている" if ja else "retired"
    if person.student:
        if not place:
            return f"隣町の学校に通う{title}" if ja else f"{_a(title)} at a school in the next town"
        return f"{place}に通う{title}" if ja else f"{_a(title)} at {place}"
    if not place:
        return f"家で仕事をしている{title}" if ja else f"{_a(title)} who works from home"
    if ja:
        return f"{place}の{title}"
    return f"the owner of {place}" if title == "owner" else f"{_a(title)} at {place}"


def _colleague(a: Person, b: Person, ja: bool) -> str:
    """`b` seen from `a` at the place where both work or learn."""
    place = a.work.name if a.work else ""
    if a.student and b.student:
        return f"{place}に通う友だち。" if ja else f"A friend from {place}."
    if a.student:
        return f"{place}の{b.title[0]}。" if ja else f"{_a(b.title[1]).capitalize()} at {place}."
    if b.student:
        return f"{place}に通う教え子。" if ja else f"A pupil of mine at {place}."
    if ja:
        return f"{place}で一緒に働く{b.title[0]}。"
    return f"Works with me at {place} as {'the owner' if b.title[1] == 'owner' else _a(b.title[1])}."
