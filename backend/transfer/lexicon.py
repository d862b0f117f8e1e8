"""The word lists `generate.py` combines into towns: names, places, occupations, hobbies, traits, styles.

Each list is short (tens of entries); the generator multiplies them (40 family names x 50 given names per
language, 30 place types x 40 stems), so a 1,000-agent town gets distinct names and places without a number
suffix. Japanese and English entries travel in pairs where a persona or place needs both languages.
"""

from __future__ import annotations

from typing import NamedTuple


def _pairs(text: str) -> list[tuple[str, str]]:
    """`"佐藤:sato 北山:North_Hill"` as `[("佐藤", "sato"), ("北山", "North Hill")]`."""
    split = (word.partition(":") for word in text.split())
    return [(left, right.replace("_", " ")) for left, _, right in split]


#: Japanese names with the romaji an agent id is made of.
JA_FAMILY = _pairs(
    "佐藤:sato 鈴木:suzuki 高橋:takahashi 田中:tanaka 伊藤:ito 渡辺:watanabe 山本:yamamoto 中村:nakamura "
    "小林:kobayashi 加藤:kato 吉田:yoshida 山田:yamada 佐々木:sasaki 山口:yamaguchi 松本:matsumoto 井上:inoue "
    "木村:kimura 林:hayashi 斎藤:saito 清水:shimizu 山崎:yamazaki 森:mori 池田:ikeda 橋本:hashimoto 阿部:abe "
    "石川:ishikawa 前田:maeda 藤田:fujita 小川:ogawa 岡田:okada 後藤:goto 長谷川:hasegawa 村上:murakami "
    "近藤:kondo 石井:ishii 坂本:sakamoto 遠藤:endo 青木:aoki 藤井:fujii 西村:nishimura"
)
JA_FEMALE = _pairs(
    "葵:aoi 陽菜:hina 結衣:yui 美咲:misaki さくら:sakura 凛:rin 芽依:mei 楓:kaede 彩花:ayaka 真央:mao "
    "千尋:chihiro 遥:haruka 菜々子:nanako 由美:yumi 恵子:keiko 直子:naoko 早苗:sanae 明美:akemi 紗希:saki "
    "琴音:kotone 栞:shiori 瑞希:mizuki 絵里:eri 朋美:tomomi 澄子:sumiko"
)
JA_MALE = _pairs(
    "蓮:ren 湊:minato 大翔:hiroto 悠真:yuma 陽太:yota 樹:itsuki 颯太:sota 健太:kenta 翔:sho 拓海:takumi "
    "誠:makoto 大輔:daisuke 浩二:koji 隆:takashi 修:osamu 健一:kenichi 和也:kazuya 直樹:naoki 亮:ryo "
    "悟:satoru 優斗:yuto 源三:genzo 秀樹:hideki 康介:kosuke 慎吾:shingo"
)
EN_FAMILY = (
    "Clarke Smith Jones Taylor Brown Williams Wilson Johnson Davies Robinson Wright Thompson Evans Walker "
    "White Roberts Green Hall Wood Jackson Hughes Edwards Turner Hill Cooper Ward Morris Moore Baker Harris "
    "Fisher Bennett Parker Price Murphy Bell Carter Shaw Palmer Reed"
).split()
EN_FEMALE = (
    "Emma Olivia Ava Sophie Grace Lily Chloe Hannah Ella Ruby Alice Isla Mia Zoe Clara Lucy Amelia Evie "
    "Rose Megan Holly Jessica Laura Helen Margaret"
).split()
EN_MALE = (
    "Oliver Jack Harry George Noah Leo Thomas James William Samuel Daniel Ben Oscar Henry Lucas Adam Ethan "
    "Owen Max Peter David Michael Simon Arthur Frank"
).split()

#: Neighbourhoods (one per block of the street grid), named in both languages.
NEIGHBOURHOODS = _pairs(
    "桜ヶ丘:Cherry_Hill 若葉台:Greenleaf 川端:Riverside 松風:Pinewood 港町:Harbourside 月見台:Moonview "
    "柳通り:Willow_Row 北山:North_Hill 南浜:South_Beach 東雲:Daybreak 青葉:Bluebell 藤が丘:Wisteria_Hill "
    "白樺:Birchwood 梅林:Plum_Grove 本町:Old_Town 駅前:Station_Side 泉:Springfield 竹林:Bamboo_Lane "
    "千鳥:Plover_Green 紅葉坂:Maple_Rise"
)
#: Stems of public places' names (`喫茶こもれび`, `Maple Cafe`).
JA_STEMS = (
    "こもれび ひだまり わかば さくら あおば つきみ まつかぜ はなみずき かわべ ほしの やなぎ つばき かえで "
    "しらかば もみじ なのはな はまかぜ やまぶき しののめ ちどり たけのこ ふじ うめ いずみ おかのうえ みなと "
    "いちばん あさひ ゆうやけ そよかぜ みどり こだま ひばり すずらん あけぼの たんぽぽ くるみ どんぐり "
    "かすみ にじ"
).split()
EN_STEMS = (
    "Maple Oak Willow Elm Cedar Birch Rose Ivy Hazel Juniper River Hill Bridge Market Harbour Meadow Orchard "
    "Mill Kings Queens Victoria Albert North South Chestnut Lark Swan Fox Heron Beacon Thistle Clover Acorn "
    "Rowan Linden Poplar Holly Bramble Copper Silver"
).split()


class PlaceType(NamedTuple):
    """A kind of public place: its name patterns, what it looks like, who works there and when they rise."""

    kind: str
    language: str  # "ja" or "en" for a place of one culture only (a shrine, a church); "" for both
    ja_name: str
    en_name: str
    ja_detail: str
    en_detail: str
    ja_worker: str
    en_worker: str
    wake: float
    weight: int


def _type(line: str) -> PlaceType:
    texts = line.split("|")
    return PlaceType._make([*texts[:8], float(texts[8]), int(texts[9])])


#: The first types in this list are the ones a small town gets first (the café the party needs leads).
PLACE_TYPES = [
    _type(line)
    for line in (
        "cafe||喫茶{s}|{s} Cafe|窓際の席が人気の小さな喫茶店。|A small cafe with a popular window seat.|店員|barista|6.5|4",
        "park||{s}公園|{s} Park|ベンチと花壇のある公園。|A park with benches and flower beds.|管理人|park keeper|6|4",
        "library||{s}図書館|{s} Library|静かな閲覧室のある図書館。|A library with a quiet reading room.|司書|librarian|7|2",
        "shop||{s}青果|{s} Greengrocer|店先に朝どれ野菜が並ぶ八百屋。|A greengrocer with fresh vegetables out front.|店主|greengrocer|5.5|2",
        "school||{s}小学校|{s} Primary School|校庭に大きな木がある小学校。|A primary school with a big tree in the yard.|先生|primary school teacher|6|2",
        "bakery||{s}ベーカリー|{s} Bakery|焼きたてのパンの香りが通りまで漂う。|The smell of fresh bread reaches the street.|パン職人|baker|4.5|3",
        "restaurant||食堂{s}|{s} Kitchen|日替わり定食が評判の食堂。|A diner known for its daily set meal.|料理人|cook|8|3",
        "clinic||{s}診療所|{s} Surgery|待合室に子どもたちの絵が飾ってある。|Children's drawings hang in the waiting room.|看護師|nurse|6.5|2",
        "shrine|ja|{s}神社|{s} Shrine|石段の上にある古い神社。|An old shrine at the top of stone steps.|神主|priest|5.5|1",
        "church|en|{s}教会|{s} Church|鐘楼のある小さな教会。|A small church with a bell tower.|牧師|vicar|6|1",
        "workshop||{s}木工所|{s} Joinery|木の香りがする家具の工房。|A furniture workshop that smells of wood.|家具職人|carpenter|6.5|2",
        "bar||居酒屋{s}|The {s} Arms|カウンターが常連でにぎわう店。|A pub whose bar is full of regulars.|店主|publican|10|2",
        "hall||{s}公民館|{s} Community Hall|町内会や教室が開かれる集会所。|Where clubs and classes meet.|職員|hall clerk|7|1",
        "farm||{s}農園|{s} Farm|季節の野菜が育つ町外れの畑。|Fields of seasonal vegetables at the edge of town.|農家|farmer|5|2",
        "station||{s}駅|{s} Station|一時間に二本の電車が止まる駅。|Two trains an hour stop here.|駅員|station attendant|5|1",
        "post_office||{s}郵便局|{s} Post Office|窓口に小包が積まれた郵便局。|A post office with parcels piled by the counter.|郵便局員|postal worker|6|1",
        "shop||花屋{s}|{s} Florist|季節の花が並ぶ花屋。|A florist with flowers of the season.|店員|florist|6.5|2",
        "shop||{s}書店|{s} Books|古本の棚もある本屋。|A bookshop with a shelf of second-hand books.|書店員|bookseller|8|2",
        "shop||{s}金物店|{s} Hardware|釘から鍋まで何でもある金物屋。|Everything from nails to pans.|店主|hardware dealer|7|1",
        "shop||{s}菓子店|{s} Sweet Shop|ガラス瓶に飴が並ぶ菓子店。|Jars of sweets line the shelves.|菓子職人|confectioner|6|1",
        "shop||{s}雑貨店|{s} General Store|何でもそろう老舗の雑貨屋。|An old store that sells a bit of everything.|店員|shop assistant|7.5|2",
        "cafe||カフェ{s}|The {s} Tearoom|自家焙煎の豆を売るカフェ。|A tearoom that also roasts its own coffee.|店員|tearoom waiter|7|3",
        "restaurant||{s}亭|{s} Bistro|小さな洋食屋。|A small bistro with a handwritten menu.|料理人|chef|8.5|2",
        "restaurant||{s}うどん|{s} Noodle Bar|手打ちの麺が自慢の店。|Hand-pulled noodles made at the counter.|うどん職人|noodle cook|7|1",
        "school||{s}中学校|{s} Secondary School|部活動の声が響く中学校。|A secondary school loud with after-school clubs.|先生|secondary school teacher|6|1",
        "school||{s}高校|{s} High School|校舎の屋上から海が見える高校。|A high school with a view of the sea from the roof.|先生|high school teacher|6|1",
        "workshop||{s}陶房|{s} Pottery|窯のある陶芸の工房。|A pottery with a kiln out the back.|陶芸家|potter|7|1",
        "workshop||{s}自転車店|{s} Cycles|自転車の修理もする店。|A bike shop that also does repairs.|自転車整備士|bike mechanic|7.5|1",
        "clinic||{s}歯科|{s} Dental Practice|明るい待合室の歯医者。|A dentist's with a bright waiting room.|歯科医|dentist|7|1",
        "park||{s}広場|{s} Green|噴水のまわりで子どもが遊ぶ広場。|Children play around the fountain.|庭師|gardener|6|2",
        "hall||{s}役場|{s} Town Office|町の手続きをする役場の出張所。|A branch of the town office.|職員|council clerk|7|1",
    )
]

#: A home's kind of building and what one notices there.
JA_DWELLINGS = "家 アパート 平屋 二階建て 借家 マンション".split()
EN_DWELLINGS = "house flat cottage terrace bungalow maisonette".split()
HOME_DETAILS = [
    tuple(line.split("|"))
    for line in (
        "ベランダに鉢植えが並ぶ。|Pot plants line the balcony.",
        "本棚が壁を埋めている。|Bookshelves cover the walls.",
        "縁側に将棋盤がある。|A chessboard waits on the porch.",
        "庭で猫が昼寝をしている。|A cat naps in the garden.",
        "玄関に自転車が二台止まっている。|Two bicycles stand by the door.",
        "台所の窓から通りが見える。|The kitchen window looks onto the street.",
        "小さな家庭菜園がある。|There is a small vegetable patch.",
        "古いピアノが居間に置いてある。|An old piano stands in the living room.",
        "軒先に風鈴が下がっている。|A wind chime hangs by the door.",
        "作業机に道具が散らばっている。|Tools are scattered over a workbench.",
    )
]

#: (Japanese, English) pairs: a persona's traits, manner of speech, pastime and what is on its mind.
TRAITS = _pairs(
    "几帳面:meticulous 陽気:cheerful 穏やか:calm 社交的:sociable 内気:shy 好奇心旺盛:curious 頑固:stubborn "
    "心配性:worrier 世話好き:caring 負けず嫌い:competitive 働き者:hard-working のんびり:easygoing 率直:frank "
    "慎重:cautious 情熱的:passionate 聞き上手:good_listener 冗談好き:joker 読書家:bookish 早起き:early_riser "
    "夜型:night_owl 涙もろい:soft-hearted 皮肉屋:wry 正義感が強い:principled 気前がいい:generous "
    "話し好き:talkative 物静か:quiet 器用:handy 忘れっぽい:forgetful 計画的:organised 楽天的:optimistic"
)
STYLES = [
    tuple(line.split("|"))
    for line in (
        "丁寧語で、ゆっくり話す。|Polite and unhurried.",
        "くだけた口調で、冗談をよく言う。|Casual, with plenty of jokes.",
        "短い言葉でぶっきらぼうに話す。|Blunt, in few words.",
        "関西弁まじりで、にぎやか。|Loud and lively, with a regional accent.",
        "相手の話を繰り返してから答える。|Repeats what others say before answering.",
        "語尾を少し伸ばす、のんびりした話し方。|Slow and drawling.",
        "はきはきと、要点から話す。|Crisp, gets to the point first.",
        "ことわざや昔話をよく引く。|Quotes proverbs and old stories.",
        "質問をたくさんする。|Asks a lot of questions.",
        "控えめで、言葉を選んで話す。|Reserved, choosing words carefully.",
        "専門用語がつい混じる。|Slips into the jargon of the trade.",
        "明るく、感嘆の声が多い。|Bright, full of exclamations.",
    )
]
CHILD_STYLES = [
    tuple(line.split("|"))
    for line in (
        "元気いっぱいで、早口。|Full of energy, talks fast.",
        "照れ屋で、小さな声で話す。|Shy, speaks softly.",
        "大人びた言葉を使いたがる。|Likes to use grown-up words.",
    )
]
#: Pastimes: (Japanese noun, English gerund, where: a kind of place, a place type's English name, "" at home).
HOBBIES = [
    tuple(line.split("|"))
    for line in (
        "写真|taking photographs|park",
        "読書|reading|library",
        "将棋|playing chess|park",
        "園芸|gardening|",
        "料理|cooking|",
        "ジョギング|running|park",
        "俳句|writing poetry|cafe",
        "書道|calligraphy|hall",
        "編み物|knitting|cafe",
        "ギター|playing the guitar|",
        "釣り|fishing|park",
        "水彩画|painting watercolours|park",
        "バードウォッチング|birdwatching|park",
        "合唱|choir singing|hall",
        "パン作り|baking bread|",
        "本屋めぐり|browsing bookshops|{s} Books",
        "映画|watching films|",
        "散歩|long walks|park",
    )
]
GOALS = [
    tuple(line.split("|"))
    for line in (
        "いつか自分の店を持ちたいと思っている|hopes to open a little shop one day",
        "町のお祭りをもっとにぎやかにしたい|wants the town festival to be livelier",
        "最近、昔の友だちに手紙を書こうか迷っている|keeps meaning to write to an old friend",
        "健康のために毎朝歩くと決めたばかり|has just resolved to walk every morning",
        "町の歴史を調べてまとめようとしている|is putting together a history of the town",
        "近所に新しい知り合いを作りたい|would like to get to know more neighbours",
        "仕事と休みのバランスに悩んでいる|is struggling to balance work and rest",
        "今年こそ旅行に行くつもりだ|means to take a proper holiday this year",
        "子どもの頃の夢をまた追いかけたくなっている|has started to think about a childhood dream again",
        "町の空き家の使い道が気になっている|wonders what will become of the empty houses in town",
        "新しい趣味仲間を探している|is looking for people to share a hobby with",
        "来年の町長選挙に興味がある|is curious about next year's mayoral election",
    )
]
#: Occupations worked from home: (Japanese, English).
HOME_WORK = _pairs("翻訳家:translator 作家:writer イラストレーター:illustrator プログラマー:programmer")
